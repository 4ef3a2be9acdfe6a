"""``horovod.common.process_sets`` on kolo: the very objects of ``kolo.process_sets`` (framework-
free: importing this module does not import torch)."""

from kolo.horovod_common import is_iterable  # noqa: F401
from kolo.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, process_set_by_id, process_sets,
    remove_process_set)
