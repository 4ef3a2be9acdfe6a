"""``horovod.common.elastic`` on kolo: the same objects as ``kolo.elastic``."""

from kolo.elastic import HostUpdateResult, ObjectState, State, run_fn  # noqa: F401
