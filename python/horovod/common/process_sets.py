"""``horovod.common.process_sets`` on kolo (only the global process set is supported)."""

from kolo.torch.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set)
