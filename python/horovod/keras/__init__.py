"""``horovod.keras`` on kolo: on Keras 3 ``keras`` and ``tf.keras`` are one library, so this
package *is* ``kolo.tensorflow.keras`` (``horovod.tensorflow.keras``), submodules included."""

import sys

import kolo.tensorflow.keras as _kolo_keras
from kolo.tensorflow.keras import callbacks as _callbacks, elastic as _elastic

sys.modules[f"{__name__}.callbacks"] = _callbacks
sys.modules[f"{__name__}.elastic"] = _elastic
sys.modules[__name__] = _kolo_keras
