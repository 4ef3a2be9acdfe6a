"""``horovod.common.exceptions`` on kolo."""

from kolo import HorovodInternalError  # noqa: F401
