"""``horovod.common.basics`` on kolo: ``HorovodBasics`` answers for kolo's one runtime."""

from kolo.horovod_common import HorovodBasics  # noqa: F401
from kolo.process_sets import ProcessSet, global_process_set  # noqa: F401
