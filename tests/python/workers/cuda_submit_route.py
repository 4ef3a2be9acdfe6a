"""A CUDA-tagged submit (enqueue_pointers with a device index and the caller's event) reaches the
executor's NCCL path, on a machine without NCCL: the op fails with NCCL's loader reason on every
rank instead of being read as host memory (the pointers are fakes that nothing may touch); without
the caller's event it is refused at once, naming the tensor. argv[1]: a folder where the ranks
meet before exiting. Prints "rank <rank> OK"."""

import sys
from pathlib import Path

import torch  # noqa: F401  (kolo._core.nccl_status() looks for the NCCL torch loaded)

import horovod.torch as hvd
from kolo import _core
from nccl_front_end_route import failed_for_the_loader, wait_for_every_rank

FAKE_DEVICE_POINTER = 0x10000  # never dereferenced: the NCCL path fails before any byte moves


def submit(name: str, caller_event: int) -> int:
    return _core.enqueue_pointers(
        _core.OP_ALLREDUCE, name, _core.REDUCE_SUM, 0, 1.0, 1.0, 0, 0, 0, _core.DTYPE_FLOAT32,
        [4], FAKE_DEVICE_POINTER, FAKE_DEVICE_POINTER, False, device_index=0,
        caller_event=caller_event)


def main(folder: str) -> None:
    hvd.init()
    status = _core.nccl_status()
    assert not status["loaded"], "this check needs a machine where NCCL cannot be loaded"
    try:
        submit("cuda.no_event", 0)
    except ValueError as error:
        assert "'cuda.no_event' on CUDA device 0" in str(error), error
        assert "caller's stream" in str(error), error
    else:
        raise AssertionError("a CUDA submit without the caller's event was accepted")
    handle = submit("cuda.routed", 0x20000)  # a fake cudaEvent_t, never waited on without NCCL
    try:
        _core.finish(handle)  # waits and forgets the handle (what synchronize does for it)
    except Exception as error:  # noqa: BLE001 - which class is the session's business
        text = str(error)
        assert f"rank {hvd.rank()}" in text, (text, status)
        assert failed_for_the_loader(text, status["reason"]), (text, status)
    else:
        raise AssertionError("a CUDA-tagged allreduce completed on a machine without NCCL")
    wait_for_every_rank(Path(folder), hvd.rank(), hvd.size())  # else a slow rank sees a closure
    print(f"rank {hvd.rank()} OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
