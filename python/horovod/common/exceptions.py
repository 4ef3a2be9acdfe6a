"""``horovod.common.exceptions`` on kolo: the same classes as ``kolo.exceptions``."""

from kolo.exceptions import (  # noqa: F401
    HorovodInternalError, HorovodVersionMismatchError, HostsUpdatedInterrupt,
    get_version_mismatch_message)
