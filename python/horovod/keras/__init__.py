"""``horovod.keras`` on kolo, for the Keras 3 backend in use (``KERAS_BACKEND``): on TensorFlow
(and with tf-keras) ``keras`` and ``tf.keras`` are one library, so this package *is*
``kolo.tensorflow.keras`` (``horovod.tensorflow.keras``), submodules included; on JAX and
PyTorch it is ``kolo.keras``, which needs no TensorFlow."""

import os
import sys


def _keras_backend() -> str:
    if os.environ.get("TF_USE_LEGACY_KERAS", "0").lower() in ("1", "true"):
        return "tensorflow"
    import keras
    return keras.backend.backend()


if _keras_backend() == "tensorflow":
    import kolo.tensorflow.keras as _kolo_keras
    from kolo.tensorflow.keras import callbacks as _callbacks, elastic as _elastic

    sys.modules[f"{__name__}.elastic"] = _elastic
else:
    import kolo.keras as _kolo_keras
    from kolo.keras import callbacks as _callbacks

sys.modules[f"{__name__}.callbacks"] = _callbacks
sys.modules[__name__] = _kolo_keras
