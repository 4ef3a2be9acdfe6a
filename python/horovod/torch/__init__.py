"""``horovod.torch`` on kolo: this package *is* ``kolo.torch``.

The module object is replaced by ``kolo.torch`` and its submodules are registered under their
Horovod names too, so ``import horovod.torch as hvd``, ``from horovod.torch.mpi_ops import ...``
and ``from horovod.torch.optimizer import ...`` all reach the same module objects (one handle
table, one set of counters), never a second copy.
"""

import sys

import kolo.torch as _kolo_torch
from kolo.torch import (  # noqa: F401  (loads every submodule before aliasing them)
    basics, compression, functions, handles, mpi_ops, optimizer, process_sets, sync_batch_norm)

for _name in ("basics", "compression", "functions", "handles", "mpi_ops", "optimizer",
              "process_sets", "sync_batch_norm"):
    sys.modules[f"{__name__}.{_name}"] = getattr(_kolo_torch, _name)
sys.modules[__name__] = _kolo_torch
