"""``horovod.runner.elastic.constants``: the messages callers match."""

from kolo.launch_command import RESET_LIMIT_EXCEEDED_MESSAGE  # noqa: F401
