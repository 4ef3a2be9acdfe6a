"""The collectives on TensorFlow tensors, as ``horovod.tensorflow.mpi_ops``: same names,
signatures and defaults (``_allreduce`` sums, as Horovod's raw op does; the public ``allreduce``
in ``kolo.tensorflow`` averages), each differentiable with Horovod's gradient:

- allreduce: the same allreduce (op and scale factors) of the output gradient;
- allgather: the rank-averaged output gradient, this rank's rows of it;
- broadcast: the rank-averaged output gradient on the root, zeros elsewhere;
- alltoall: the output gradient sent back with the received splits;
- reducescatter: the allgathered output gradient, times the set's size for Sum and the scales.

Each runs eagerly or as a graph node through ``bridge.collective``. This module gathers them
(and what Horovod's module re-exports) from the files that implement them, one job each.
"""

from __future__ import annotations

from kolo.common.basics import (  # noqa: F401  (horovod.tensorflow.mpi_ops has them all)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, gloo_built, gloo_enabled, handle_average_backwards_compatibility, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, start_timeline,
    stop_timeline, sycl_built)
from kolo.exceptions import HorovodInternalError  # noqa: F401
from kolo.horovod_common import HorovodBasics
from kolo.horovod_common import num_rank_is_power_2 as check_num_rank_power_of_2  # noqa: F401
from kolo.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, check_process_set, global_process_set, process_set_by_id,
    remove_process_set)
from kolo.tensorflow.rank_ops import (  # noqa: F401  (horovod.tensorflow.mpi_ops has them)
    barrier, join, local_rank_op, local_size_op, process_set_included_op, rank_op, size_op)
from kolo.tensorflow.allreduce_ops import (  # noqa: F401
    _allreduce, _allreduce_batch, _grouped_allreduce)
from kolo.tensorflow.moving_ops import (  # noqa: F401
    allgather, alltoall, broadcast, broadcast_, grouped_allgather)
from kolo.tensorflow.op_helpers import _rank_in, _set_size, as_tensor  # noqa: F401
from kolo.tensorflow.reducescatter_ops import _grouped_reducescatter, _reducescatter  # noqa: F401

# Horovod's per-extension basics object; its own tests reach process sets through it.
_basics = HorovodBasics(__file__, "mpi_lib")
