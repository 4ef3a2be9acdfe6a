"""``horovod.common.util`` on kolo: build probes and small helpers (kolo.horovod_common)."""

from kolo.horovod_common import (  # noqa: F401
    EXTENSIONS, HorovodVersionMismatchError, _cache, ccl_built, check_extension,
    check_installed_version, ddl_built, env, extension_available,
    get_average_backwards_compatibility_fun, get_ext_suffix, get_extension_full_path,
    get_version_mismatch_message, gloo_built, gpu_available, is_iterable,
    is_version_greater_equal_than, mpi_built, nccl_built, num_rank_is_power_2, split_list)
