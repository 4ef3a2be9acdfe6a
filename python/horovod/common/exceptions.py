"""``horovod.common.exceptions`` on kolo."""

from kolo import HorovodInternalError  # noqa: F401
from kolo.horovod_common import (  # noqa: F401,E402
    HorovodVersionMismatchError, HostsUpdatedInterrupt, get_version_mismatch_message)
