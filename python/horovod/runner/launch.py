"""``horovod.runner.launch`` on kolo: the two names Horovod's elastic integration tests call,
``parse_args()`` (reads ``sys.argv``) and ``_run_elastic(args)`` (runs the job through kolorun,
with the driver's ``ELASTIC_TIMEOUT_SECS`` as the default --elastic-timeout, read at call time
so that a test's ``mock.patch`` of it counts)."""

from horovod.runner.elastic import driver
from kolo.launch_command import parse_args  # noqa: F401
from kolo.launch_command import run as _run_command


def _run_elastic(args):
    _run_command(args, elastic_timeout=driver.elastic_timeout_seconds(),
                 extra_env=driver.discovery_environment())


_run = _run_elastic
