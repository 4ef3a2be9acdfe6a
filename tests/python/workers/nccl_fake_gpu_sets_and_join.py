"""Process sets, barrier and hvd.join() with CUDA tensors, on the stand-in GPU library with
FAKE_GPU_SHARED_DIR set (its communicators of several ranks move bytes; see
nccl_fake_gpu_hierarchical.py). A process set of ranks 1 and the last allreduces a CUDA
tensor on a communicator of its own (its ranks, numbered in the set), then every rank passes a
barrier. Then the last rank
joins while the others still allreduce CUDA tensors through NCCL: it must take part with zeros
in device memory (the stand-in's log shows kolo's cudaMalloc and the zeros' copy before its
ncclAllReduce), Sum must leave the others' total and Average divide it by the job's size, as
Horovod's join does. The test sets HOROVOD_HIERARCHICAL_ALLREDUCE=1 with one rank per host
(or one host): every allreduce stays NCCL's flat one. Last, shutdown and init (an elastic
reset) make a new communicator. Prints "rank <rank> OK"."""

import ctypes
import os

FAKE = ctypes.CDLL(os.environ["FAKE_GPU_LIBRARY"], mode=ctypes.RTLD_GLOBAL)
FAKE.fake_gpu_log.restype = ctypes.c_char_p

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from kolo.torch import gpu_path, handles, nccl_submit, staging  # noqa: E402

from nccl_fake_gpu import (  # noqa: E402
    StandInCuda, allreduce_beside_the_last_rank_joined, joined_ranks_zeros_in_device_memory)


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    warm = torch.ones(4)
    summed = torch.full((8,), float(rank + 1))
    averaged = torch.full((8,), float(rank + 1))
    calls = StandInCuda(warm, summed, averaged)
    nccl_submit.use_calls(calls)
    handles._submit_pointers = lambda *args, **kwargs: None  # no host pointer path for these
    # Every rank's first CUDA op: the communicator (and the joined rank's GPU) exists.
    assert torch.equal(hvd.synchronize(hvd.allreduce_async(warm, op=hvd.Sum, name="warm")),
                       torch.full((4,), float(size)))
    members = sorted({1, size - 1})  # not every rank (that set exists already): [1], [1, 2]
    pair = hvd.add_process_set(members)
    in_set = torch.full((5,), float(rank))
    calls.cuda.add(id(in_set))
    FAKE.fake_gpu_clear_log()
    if pair.included():
        got = hvd.synchronize(hvd.allreduce_async(in_set, op=hvd.Sum, name="in_set",
                                                  process_set=pair))
        assert torch.equal(got, torch.full((5,), float(sum(members)))), got
        log = FAKE.fake_gpu_log().decode()
        assert f"ncclCommInitRankConfig nranks={len(members)} rank={pair.rank()} " in log, log
    hvd.barrier()
    joining = size - 1
    FAKE.fake_gpu_clear_log()
    if rank == joining:
        last = hvd.join()
        joined_ranks_zeros_in_device_memory(FAKE.fake_gpu_log().decode().splitlines())
    else:
        allreduce_beside_the_last_rank_joined(summed, averaged)
        log = FAKE.fake_gpu_log().decode()  # flat, though HOROVOD_HIERARCHICAL_ALLREDUCE=1
        assert "ncclAllReduce n=8 " in log and "ncclReduceScatter" not in log, log
        last = hvd.join()
    assert last in range(size), last
    # An elastic reset (shutdown, init) makes a new communicator: a new unique id from rank 0.
    before = [line.split(" id=")[1] for line in FAKE.fake_gpu_log().decode().splitlines()
              if line.startswith(f"ncclCommInitRankConfig nranks={size} ")]
    hvd.shutdown()
    hvd.init()
    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    FAKE.fake_gpu_clear_log()
    assert torch.equal(hvd.synchronize(hvd.allreduce_async(warm, op=hvd.Sum, name="again")),
                       torch.full((4,), float(size)))
    after = [line.split(" id=")[1] for line in FAKE.fake_gpu_log().decode().splitlines()
             if line.startswith(f"ncclCommInitRankConfig nranks={size} rank={rank} ")]
    assert len(after) == 1 and after[0] not in before, (before, after)
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main()
