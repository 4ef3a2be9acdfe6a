"""Keras 3 resolves ``model.compile(jit_compile="auto")`` to XLA on TensorFlow whenever every
layer supports it; XLA cannot run kolo's collectives (its ``KoloCollective`` op has no XLA
kernel and the others are ``tf.numpy_function`` nodes, see kolo/tensorflow/bridge.py). So that
Horovod's Keras scripts run unchanged, "auto" resolves to False for a model compiled with kolo's
DistributedOptimizer (with any other optimizer it is left to Keras)."""

from __future__ import annotations


def resolve_auto_jit_compile_without_xla() -> None:
    try:
        from keras.src.trainers.trainer import Trainer
    except ImportError:  # tf-keras (never XLA by default) or a Keras that moved it
        return
    original = Trainer._resolve_auto_jit_compile
    if getattr(original, "_kolo_wrapped", False):
        return

    def resolve(self):
        if getattr(getattr(self, "optimizer", None), "_kolo_distributed", False):
            return False
        return original(self)

    resolve._kolo_wrapped = True
    Trainer._resolve_auto_jit_compile = resolve
