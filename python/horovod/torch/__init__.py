"""``horovod.torch`` on kolo: this package *is* ``kolo.torch``.

The module object is replaced by ``kolo.torch`` and its submodules are registered under their
Horovod names too, so ``import horovod.torch as hvd``, ``from horovod.torch.mpi_ops import ...``
and ``from horovod.torch.optimizer import ...`` all reach the same module objects (one handle
table, one set of counters), never a second copy.
"""

import sys

import kolo.torch as _kolo_torch
from kolo.torch import (  # noqa: F401  (loads every submodule before aliasing them)
    basics, compression, elastic, functions, handles, mpi_ops, optimizer, process_sets,
    sync_batch_norm)
from kolo.torch.elastic import sampler as _sampler, state as _state

for _name in ("basics", "compression", "elastic", "functions", "handles", "mpi_ops", "optimizer",
              "process_sets", "sync_batch_norm"):
    sys.modules[f"{__name__}.{_name}"] = getattr(_kolo_torch, _name)
sys.modules[f"{__name__}.elastic.sampler"] = _sampler
sys.modules[f"{__name__}.elastic.state"] = _state
sys.modules[__name__] = _kolo_torch
