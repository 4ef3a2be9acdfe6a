"""hvd.join(device) on a rank that ran no CUDA operation yet, on the stand-in GPU library (with
FAKE_GPU_SHARED_DIR set, its communicators of several ranks move bytes). The last rank joins at
once while the others allreduce CUDA tensors through NCCL. Argument "device": it joins with
hvd.join(0), so its zeros live on device 0 and its communicator is made there (the stand-in's
log shows the communicator, the zeros' allocation and copy before each ncclAllReduce); Sum
leaves the others' total and Average divides it by the job's size. Argument "none": it joins
with hvd.join(), has no GPU for its zeros, and its join fails naming it; its peer prints
"rank <rank> ended: <error>" once it has gone. Prints "rank <rank> OK" (every rank with
"device"; the joined rank with "none")."""

import ctypes
import os
import sys

FAKE = ctypes.CDLL(os.environ["FAKE_GPU_LIBRARY"], mode=ctypes.RTLD_GLOBAL)
FAKE.fake_gpu_log.restype = ctypes.c_char_p

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from kolo.torch import gpu_path, handles, nccl_submit, staging  # noqa: E402

from nccl_fake_gpu import (  # noqa: E402
    StandInCuda, allreduce_beside_the_last_rank_joined, joined_ranks_zeros_in_device_memory)


def joined_rank(size: int, with_device: bool) -> None:
    if not with_device:
        try:
            hvd.join()
        except hvd.HorovodInternalError as error:  # as every failed collective
            message = str(error)
            assert f"rank {size - 1}: joined, it has no GPU" in message, message
            print(f"rank {size - 1} OK", flush=True)
            os._exit(0)  # its session has failed; its peer's join then ends naming it
        raise AssertionError("join() without a device succeeded on a rank with no GPU")
    last = hvd.join(0)
    assert last in range(size), last
    log = FAKE.fake_gpu_log().decode().splitlines()
    malloc = joined_ranks_zeros_in_device_memory(log)
    comm = [i for i, line in enumerate(log)
            if line.startswith(f"ncclCommInitRankConfig nranks={size} rank={size - 1} ")]
    assert len(comm) == 1 and comm[0] < malloc, log  # made at that allreduce, for device 0


def main() -> None:
    with_device = sys.argv[1] == "device"
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    summed = torch.full((8,), float(rank + 1))
    averaged = torch.full((8,), float(rank + 1))
    nccl_submit.use_calls(StandInCuda(summed, averaged))
    handles._submit_pointers = lambda *args, **kwargs: None  # no host pointer path for these
    FAKE.fake_gpu_clear_log()
    if rank == size - 1:  # joins before any CUDA op: no communicator, no GPU of its own yet
        joined_rank(size, with_device)
    elif not with_device:
        # Without FAKE_GPU_SHARED_DIR the stand-in's allreduce moves no bytes, so this rank is
        # not held in it for the stand-in's minute; it ends when its joined peer has gone.
        try:
            hvd.synchronize(hvd.allreduce_async(summed, op=hvd.Sum, name="summed"))
            hvd.join()
        except hvd.HorovodInternalError as error:
            print(f"rank {rank} ended: {error}", flush=True)
        os._exit(0)
    else:
        allreduce_beside_the_last_rank_joined(summed, averaged)
        last = hvd.join()
        assert last in range(size), last
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main()
