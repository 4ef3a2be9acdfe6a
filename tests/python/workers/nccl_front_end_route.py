"""The torch front end's NCCL submit through the real core, on a machine without NCCL: CPU tensors
stand for CUDA tensors (fake CUDA calls: a fake event, a fake stream), hvd.allreduce_async or
broadcast_async_ (argv[1]) hands one to the executor's NCCL path, and synchronize()
(finish_on_stream) raises HorovodInternalError with NCCL's loader reason on every rank; the tensor
is never touched (the NCCL path fails before any byte moves). argv[2]: a folder where the ranks
meet before exiting. Prints "rank <rank> OK"."""

import sys
import time
from pathlib import Path

import torch

import horovod.torch as hvd
from kolo import _core
from kolo.torch import gpu_path, handles, nccl_submit, staging


class StandInCuda(nccl_submit.CudaCalls):
    """The tensors in `cuda` pass for CUDA tensors on device 0."""

    def __init__(self, *cuda):
        self.cuda = {id(t) for t in cuda}

    def is_cuda(self, tensor):
        return id(tensor) in self.cuda

    def device_index(self, tensor):
        return 0

    def record_on_caller(self, device):
        return None, 0x20000  # a fake cudaEvent_t: never waited on without NCCL

    def caller_stream(self, device):
        return 0x30000


def failed_for_the_loader(text: str, reason: str) -> bool:
    """This rank's own loader failure, or a peer's: a rank whose own failure came first closes
    its links at once (the session's end), and a rank still between negotiation and execution
    then reports that closure, naming the rank. kolorun's log shows every rank's first error."""
    return reason in text or "closed the connection" in text


def expect_loader_failure(handle, what: str, reason: str) -> None:
    try:
        hvd.synchronize(handle)
    except hvd.HorovodInternalError as error:
        text = str(error)
        assert f"rank {hvd.rank()}" in text and failed_for_the_loader(text, reason), (what, text)
    else:
        raise AssertionError(f"{what} of a CUDA-tagged tensor completed without NCCL")


def wait_for_every_rank(folder: Path, rank: int, size: int) -> None:
    """No rank exits before every rank saw its own failure: a rank that exited first would
    close its links, and a slower rank would report that closure instead of NCCL's reason. The
    session is gone after the failure, so the ranks meet through files."""
    (folder / f"failed.{rank}").touch()
    deadline = time.monotonic() + 50
    while not all((folder / f"failed.{r}").exists() for r in range(size)):
        assert time.monotonic() < deadline, "the other ranks never reported their failure"
        time.sleep(0.01)


def main(op: str, folder: str) -> None:
    hvd.init()
    status = _core.nccl_status()
    assert not status["loaded"], "this check needs a machine where NCCL cannot be loaded"
    staging._choices["cuda"] = {name: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for name in gpu_path.OPERATIONS}
    tensor = torch.full((4,), float(hvd.rank()))
    before = tensor.clone()
    nccl_submit.use_calls(StandInCuda(tensor))
    # The host pointer path must not take the stand-in (it would reduce it on the CPU).
    handles._submit_pointers = lambda *args, **kwargs: None
    if op == "allreduce":
        handle = hvd.allreduce_async(tensor, name="cuda.grad")
    else:
        handle = hvd.broadcast_async_(tensor, 0, name="cuda.weights")
    expect_loader_failure(handle, op, status["reason"])
    assert torch.equal(tensor, before), tensor  # never read nor written as host memory
    wait_for_every_rank(Path(folder), hvd.rank(), hvd.size())
    print(f"rank {hvd.rank()} OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
