"""``horovod.torch``'s view of process sets: the framework-free objects of ``kolo.process_sets``
(which ``horovod.common.process_sets`` gives too), so ``hvd.ProcessSet``,
``hvd.global_process_set`` and a set registered through either name are one and the same.

Nothing about a process set depends on torch; the torch operations take one as ``process_set=``
and turn it into the core's id with ``check_process_set``.
"""

from kolo.process_sets import (  # noqa: F401  (re-exported under horovod.torch's names)
    ProcessSet, add_process_set, check_process_set, global_process_set, process_set_by_id,
    process_sets, remove_process_set)

__all__ = ["ProcessSet", "add_process_set", "check_process_set", "global_process_set",
           "process_set_by_id", "process_sets", "remove_process_set"]
