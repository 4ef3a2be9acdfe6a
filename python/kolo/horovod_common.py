"""kolo's answers to ``horovod.common``'s helpers: the build and capability probes of
``horovod.common.util``, ``horovod.common.basics.HorovodBasics`` and the version and elastic
exception types, with Horovod's names and signatures (``horovod.common.*`` re-exports them).

Horovod builds one extension library per framework (``mpi_lib_v2`` for PyTorch, against the
installed torch) and probes each in a subprocess. kolo has a single C++ module, ``kolo._core``,
that is never compiled against a framework, so these answer directly, without subprocesses:
PyTorch and TensorFlow (with Keras) are served, and no framework version can mismatch the build.
"""

from __future__ import annotations

import functools
import importlib
import os
import sysconfig
from contextlib import contextmanager

from kolo import process_sets as _process_sets
from kolo.common import basics as _basics
from kolo.common.grouping import split_list
from kolo.common.reduce_ops import get_average_backwards_compatibility_fun
from kolo.exceptions import (
    HorovodVersionMismatchError, HostsUpdatedInterrupt, get_version_mismatch_message)

# The frameworks Horovod probes; kolo supports the first two (Keras rides on TensorFlow's).
EXTENSIONS = ["tensorflow", "torch", "mxnet"]
_SUPPORTED_EXTENSIONS = {"torch", "tensorflow", "keras"}


def get_ext_suffix():
    """The file suffix of this Python's extension modules (".cpython-311-x86_64-linux-gnu.so")."""
    return sysconfig.get_config_var("EXT_SUFFIX") or sysconfig.get_config_var("SO") or ".so"


def get_extension_full_path(pkg_path, *args):
    """Where Horovod would keep extension ``args[-1]``: beside ``pkg_path``, in the folders
    ``args[:-1]``, with this Python's extension suffix."""
    if not args:
        raise ValueError("get_extension_full_path needs at least the extension's name")
    folder = os.path.join(os.path.dirname(pkg_path), *args[:-1])
    return os.path.join(folder, args[-1] + get_ext_suffix())


def _framework_of(name: str) -> str:
    # "horovod.torch" -> "torch"; "torch" stays.
    return name.rsplit(".", 1)[-1]


def check_extension(ext_name, ext_env_var, pkg_path, *args):
    """Raises ImportError unless kolo can serve framework extension ``ext_name``
    ("horovod.torch"): kolo's core module must load and the framework must be PyTorch or
    TensorFlow (Keras).
    ``pkg_path`` and ``args`` name Horovod's per-framework library, which kolo does not have."""
    framework = _framework_of(ext_name)
    if framework not in _SUPPORTED_EXTENSIONS:
        raise ImportError(f"Extension {ext_name} is not available on kolo: kolo supports PyTorch "
                          f"(horovod.torch) and TensorFlow (horovod.tensorflow, horovod.keras) "
                          f"only, so {ext_env_var}=1 would not help")
    try:
        importlib.import_module("kolo._core")
    except ImportError as error:
        raise ImportError(f"Extension {ext_name} is not available: kolo's core module does not "
                          f"load ({error}); reinstall kolo (pip install .)") from error


def extension_available(ext_base_name, verbose=False):
    """Whether framework extension ``ext_base_name`` ("torch") works here."""
    try:
        check_extension(ext_base_name, "HOROVOD_WITH_" + _framework_of(ext_base_name).upper(),
                        __file__)
        importlib.import_module(_framework_of(ext_base_name))
        available = True
    except ImportError:
        available = False
    if verbose:
        print(f"Extension {ext_base_name} {'was' if available else 'was NOT'} built.")
    return available


def gpu_available(ext_base_name, verbose=False):
    """Whether the framework sees a GPU (Horovod's ``_check_has_gpu``: ``torch.cuda``, TensorFlow's
    GPU devices). A GPU is usable with kolo without NCCL too: CUDA tensors then go through host
    memory (kolo.torch.staging)."""
    available = False
    if extension_available(ext_base_name):
        if _framework_of(ext_base_name) == "torch":
            import torch
            available = bool(torch.cuda.is_available())
        else:
            import tensorflow as tf
            available = bool(tf.config.list_physical_devices("GPU"))
    if verbose:
        print(f"Extension {ext_base_name} {'was' if available else 'was NOT'} running with GPU.")
    return available


def mpi_built(verbose=False):
    """Whether kolo's MPI plugin exists and loads."""
    return _basics.mpi_built()


def gloo_built(verbose=False):
    """True: kolo's own transports play Gloo's role."""
    return _basics.gloo_built()


def nccl_built(verbose=False):
    """Whether CUDA tensors' collectives can run in NCCL in this process (kolo loads NCCL and the
    CUDA runtime at run time: kolo.common.basics.nccl_built)."""
    return _basics.nccl_built()


def ddl_built(verbose=False):
    """False: kolo has no IBM DDL."""
    return _basics.ddl_built()


def ccl_built(verbose=False):
    """False: kolo has no oneCCL."""
    return _basics.ccl_built()


@contextmanager
def env(**kwargs):
    """Sets the given environment variables (None: left alone) for the ``with`` block, then puts
    back what was there before."""
    changes = {name: value for name, value in kwargs.items() if value is not None}
    before = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def num_rank_is_power_2(num_rank):
    """Whether ``num_rank`` is a power of two (Horovod's CPU Adasum needs one; kolo's does not)."""
    return num_rank > 0 and num_rank & (num_rank - 1) == 0


def check_installed_version(name, version, exception=None):
    """Horovod checks that ``name``'s version is the one its extension was built against. kolo is
    never compiled against a framework, so every version is the right one: nothing to check."""
    return None


def _cache(function):
    """Horovod's memoizing decorator (``horovod.common.util._cache``, which its tests import):
    the function runs once per distinct arguments, later calls return that first answer."""
    return functools.lru_cache(maxsize=None)(function)


def is_iterable(x):
    """Whether ``iter(x)`` works."""
    try:
        iter(x)
    except TypeError:
        return False
    return True


def is_version_greater_equal_than(ver, target):
    """Whether version string ``ver`` >= ``target`` (PEP 440 ordering)."""
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError(f"This function only accepts string arguments, got {type(ver).__name__} "
                         f"{ver!r} and {type(target).__name__} {target!r}")
    from packaging import version
    return version.parse(ver) >= version.parse(target)


class HorovodBasics:
    """Horovod's per-framework basics object (``HorovodBasics(__file__, 'mpi_lib_v2')``), on kolo:
    every method answers for kolo's one runtime, whatever extension it was created for."""

    def __init__(self, pkg_path, *args):
        basics = _basics
        self.pkg_path = pkg_path
        self.Average, self.Sum, self.Adasum = basics.Average, basics.Sum, basics.Adasum
        self.Min, self.Max, self.Product = basics.Min, basics.Max, basics.Product

    def init(self, comm=None, process_sets=None):
        """See ``horovod.torch.init``."""
        return _basics.init(comm=comm, process_sets=process_sets)

    def shutdown(self):
        return _basics.shutdown()

    def is_initialized(self):
        return _basics.is_initialized()

    def start_timeline(self, file_path, mark_cycles=False):
        return _basics.start_timeline(file_path, mark_cycles)

    def stop_timeline(self):
        return _basics.stop_timeline()

    def size(self):
        return _basics.size()

    def local_size(self):
        return _basics.local_size()

    def cross_size(self):
        return _basics.cross_size()

    def rank(self):
        return _basics.rank()

    def local_rank(self):
        return _basics.local_rank()

    def cross_rank(self):
        return _basics.cross_rank()

    def is_homogeneous(self):
        return _basics.is_homogeneous()

    def mpi_threads_supported(self):
        return _basics.mpi_threads_supported()

    def mpi_enabled(self):
        return _basics.mpi_enabled()

    def mpi_built(self):
        return _basics.mpi_built()

    def gloo_enabled(self):
        return _basics.gloo_enabled()

    def gloo_built(self):
        return _basics.gloo_built()

    def nccl_built(self):
        return _basics.nccl_built()

    def ddl_built(self):
        return _basics.ddl_built()

    def ccl_built(self):
        return _basics.ccl_built()

    def cuda_built(self):
        return _basics.cuda_built()

    def rocm_built(self):
        return _basics.rocm_built()

    def sycl_built(self):
        return _basics.sycl_built()

    # Horovod's internals that its own tests call (``hvd.mpi_ops._basics``): process sets by id.
    def _get_process_set_ids_and_ranks(self):
        return _process_sets.ids_and_ranks()

    def _process_set_size(self, process_set_id):
        return _process_sets.process_set_by_id(process_set_id).size()

    def _process_set_rank(self, process_set_id):
        return _process_sets.process_set_by_id(process_set_id).rank()

    def _comm_process_set_id(self, comm):
        return _process_sets.comm_process_set_id(comm)


__all__ = [
    "EXTENSIONS", "HorovodBasics", "HorovodVersionMismatchError", "HostsUpdatedInterrupt",
    "ccl_built", "check_extension", "check_installed_version", "ddl_built", "env",
    "extension_available", "get_average_backwards_compatibility_fun", "get_ext_suffix",
    "get_extension_full_path", "get_version_mismatch_message", "gloo_built", "gpu_available",
    "is_iterable", "is_version_greater_equal_than", "mpi_built", "nccl_built",
    "num_rank_is_power_2", "split_list",
]
