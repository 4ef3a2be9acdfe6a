"""A rank dies inside an NCCL allreduce on the stand-in GPU library (see nccl_fake_gpu.py): the
last rank's stand-in NCCL ends its process inside ncclAllReduce, and on every other rank the
stand-in never finishes the collective (ncclInProgress forever). The survivors' op must end with
HorovodInternalError naming the dead rank, well within kolorun's grace period, because kolo's CPU
side sees the closed links and aborts the communicator (ncclCommAbort), and the session's end
aborts it too. Prints "rank <rank> OK" on the survivors."""

import ctypes
import os
import time

FAKE = ctypes.CDLL(os.environ["FAKE_GPU_LIBRARY"], mode=ctypes.RTLD_GLOBAL)
FAKE.fake_gpu_log.restype = ctypes.c_char_p

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from kolo.torch import gpu_path, handles, nccl_submit, staging  # noqa: E402

from nccl_fake_gpu import StandInCuda  # noqa: E402


def main() -> None:
    hvd.init()
    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    grad = torch.ones(16)
    nccl_submit.use_calls(StandInCuda(grad))
    handles._submit_pointers = lambda *args, **kwargs: None
    # A first op makes the communicator on every rank (no fault yet).
    hvd.synchronize(hvd.broadcast_async_(grad, 0, name="warm"))
    dying = hvd.size() - 1
    if hvd.rank() == dying:
        FAKE.fake_gpu_exit_in(b"ncclAllReduce")
    else:
        FAKE.fake_gpu_in_progress(1 << 30, 0)  # NCCL never finishes it on its own
    started = time.monotonic()
    try:
        hvd.synchronize(hvd.allreduce_async(grad, name="grad"))
    except hvd.HorovodInternalError as error:
        text = str(error)
        assert f"rank {dying}" in text, text
        print(f"rank {hvd.rank()} failed after {time.monotonic() - started:.2f} s", flush=True)
        assert b"ncclCommAbort" in FAKE.fake_gpu_log(), FAKE.fake_gpu_log()
    else:
        raise AssertionError("the allreduce completed though a rank died inside it")
    print(f"rank {hvd.rank()} OK", flush=True)


if __name__ == "__main__":
    main()
