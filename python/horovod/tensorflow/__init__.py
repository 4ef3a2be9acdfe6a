"""``horovod.tensorflow`` on kolo: this package *is* ``kolo.tensorflow``.

The module object is replaced by ``kolo.tensorflow`` and its submodules are registered under
their Horovod names too (``horovod.tensorflow.mpi_ops``, ``horovod.tensorflow.keras``, ...), so
every import path reaches the same module objects, never a second copy.
"""

import sys

import kolo.tensorflow as _kolo_tf
from kolo.tensorflow import (  # noqa: F401  (loads every submodule before aliasing them)
    compression, elastic, functions, keras, mpi_ops, sync_batch_norm, util)
from kolo.tensorflow.keras import callbacks as _callbacks, elastic as _keras_elastic

for _name in ("compression", "elastic", "functions", "keras", "mpi_ops", "sync_batch_norm",
              "util"):
    sys.modules[f"{__name__}.{_name}"] = getattr(_kolo_tf, _name)
sys.modules[f"{__name__}.keras.callbacks"] = _callbacks
sys.modules[f"{__name__}.keras.elastic"] = _keras_elastic
sys.modules[__name__] = _kolo_tf
