"""Stands in for the network in tests/python/test_tensorflow_examples.py: this machine is offline,
and Horovod's TensorFlow examples call ``keras.datasets.mnist.load_data``, which downloads MNIST
from Google's storage (and checks the download against MNIST's sha256).

The test puts this folder first on PYTHONPATH, so every rank imports this module at start-up;
when (and only when) Keras 3 or tf-keras imports its ``datasets.mnist`` module, that module's
``get_file`` is wrapped: a request for MNIST's origin is answered with the file named by
$OFFLINE_MNIST_NPZ (Debian's Fashion-MNIST in MNIST's npz layout, written by the test) instead
of a download. MNIST's sha256 cannot match a stand-in, so that one answer skips the check; every
other ``get_file`` call goes to Keras unchanged. Nothing heavy is imported here."""

import importlib.abc
import importlib.machinery
import os
import sys

MNIST_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
MNIST_MODULES = ("keras.src.datasets.mnist", "tf_keras.src.datasets.mnist")


def _serve_offline(get_file):
    def get_file_offline(fname=None, origin=None, *args, **kwargs):
        if origin == MNIST_ORIGIN and os.environ.get("OFFLINE_MNIST_NPZ"):
            return os.environ["OFFLINE_MNIST_NPZ"]
        return get_file(fname, origin, *args, **kwargs)
    return get_file_offline


class _WrapMnistGetFile(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in MNIST_MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            module.get_file = _serve_offline(module.get_file)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _WrapMnistGetFile())
