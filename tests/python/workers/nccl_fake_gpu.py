"""The torch front end's NCCL path end to end on the stand-in GPU library (tests/cpp/gpu/fakes:
device memory is host memory, every CUDA and NCCL call logged), loaded as the process's CUDA
runtime and, through KOLO_NCCL_LIBRARY, as its NCCL. CPU tensors stand for CUDA tensors on
device 0; the caller's stream and events are the stand-in's own. Checks the bytes at np 1 (a
communicator of more than one rank only records) and, at every size, the order of the calls:
kolo's stream waits for the caller's event, then NCCL runs, then kolo records its completion
event, and synchronize() makes the caller's stream wait for that event (no host wait).
Prints "rank <rank> OK"."""

import ctypes
import os
import sys

# Before kolo looks for a CUDA runtime: the stand-in is then the one "already loaded".
FAKE = ctypes.CDLL(os.environ["FAKE_GPU_LIBRARY"], mode=ctypes.RTLD_GLOBAL)
FAKE.fake_gpu_log.restype = ctypes.c_char_p

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from kolo import _core  # noqa: E402
from kolo.torch import gpu_path, handles, nccl_submit, staging  # noqa: E402


def fake_handle(create) -> int:
    handle = ctypes.c_void_p()
    assert create(ctypes.byref(handle), ctypes.c_uint(0)) == 0
    return handle.value


class StandInCuda(nccl_submit.CudaCalls):
    """The tensors in `cuda` pass for CUDA tensors on device 0; events and the caller's stream
    are the stand-in library's (named in its log)."""

    def __init__(self, *cuda):
        self.cuda = {id(t) for t in cuda}
        self.stream = fake_handle(FAKE.cudaStreamCreateWithFlags)  # "S1": the caller's

    def is_cuda(self, tensor):
        return id(tensor) in self.cuda

    def device_index(self, tensor):
        return 0

    def record_on_caller(self, device):
        event = fake_handle(FAKE.cudaEventCreateWithFlags)
        assert FAKE.cudaEventRecord(ctypes.c_void_p(event), ctypes.c_void_p(self.stream)) == 0
        return None, event

    def caller_stream(self, device):
        return self.stream


def log() -> list:
    return FAKE.fake_gpu_log().decode().splitlines()


def allreduce_beside_the_last_rank_joined(summed, averaged) -> None:
    """Every rank but the last, which has joined: `summed` and `averaged` (CUDA tensors of 8
    floats, rank + 1 each) through NCCL; Sum leaves the others' total and Average divides it by
    the job's size, as Horovod's join does."""
    rank, size = hvd.rank(), hvd.size()
    others = sum(r + 1 for r in range(size - 1))
    got = hvd.synchronize(hvd.allreduce_async(summed, op=hvd.Sum, name="summed"))
    assert torch.equal(got, torch.full((8,), float(others))), (rank, got)
    got = hvd.synchronize(hvd.allreduce_async(averaged, op=hvd.Average, name="averaged"))
    assert torch.equal(got, torch.full((8,), others / size)), (rank, got)


def joined_ranks_zeros_in_device_memory(lines) -> int:
    """The joined rank's log (`lines`) for its peers' two allreduces of 8 floats: its zeros
    allocated once in device memory and refilled before each ncclAllReduce. Returns the line of
    the allocation."""
    malloc = [i for i, line in enumerate(lines) if line == "cudaMalloc 32"]
    zeros = [i for i, line in enumerate(lines) if line.startswith("cudaMemcpyAsync 32 ")]
    reduce = [i for i, line in enumerate(lines) if line.startswith("ncclAllReduce n=8 ")]
    assert len(malloc) == 1 and len(zeros) == len(reduce) == 2, lines
    assert malloc[0] < zeros[0] < reduce[0] < zeros[1] < reduce[1], lines
    return malloc[0]


def main() -> None:
    hvd.init()
    assert _core.nccl_status()["loaded"] and _core.cuda_status()["loaded"], (
        _core.nccl_status(), _core.cuda_status())
    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    grad = torch.arange(8, dtype=torch.float32) + hvd.rank()
    weights = torch.full((3,), 10.0 + hvd.rank(), dtype=torch.float64)
    before = grad.clone()
    calls = StandInCuda(grad, weights)
    nccl_submit.use_calls(calls)
    handles._submit_pointers = lambda *args, **kwargs: None  # no host pointer path for these
    FAKE.fake_gpu_clear_log()
    # No prescale: a CUDA tensor's scale is the front end's (kolo/torch/device_scale.py), which
    # would hand the core a new tensor the stand-in does not pass for a CUDA one.
    summed = hvd.synchronize(hvd.allreduce_async(grad, op=hvd.Sum, name="grad"))
    lines = log()
    # The caller's event E1 on the caller's stream S1; kolo's stream waits for it; NCCL; kolo's
    # completion event; synchronize() makes the caller's stream S1 wait for it, then drops it
    # (CUDA keeps an event a stream waits for until it completed).
    assert lines[:2] == ["cudaEventCreateWithFlags E1 flags=0", "cudaEventRecord E1 S1"], lines
    kolo_waits = [i for i, line in enumerate(lines) if line.endswith(" E1")
                  and line.startswith("cudaStreamWaitEvent ")]
    reduce = [i for i, line in enumerate(lines) if line.startswith("ncclAllReduce n=8 type=7")]
    done = [i for i, line in enumerate(lines) if line.startswith("cudaEventRecord ")][1:]
    assert len(kolo_waits) == len(reduce) == len(done) == 1, lines
    assert kolo_waits[0] < reduce[0] < done[0], lines
    completion = lines[done[0]].split()[1]
    assert lines[-2:] == [f"cudaStreamWaitEvent S1 {completion}",
                          f"cudaEventDestroy {completion}"], lines
    assert f"ncclCommInitRankConfig nranks={hvd.size()} rank={hvd.rank()}" in "\n".join(lines)
    if hvd.size() == 1:
        assert torch.equal(summed, before), summed  # the sum of one rank, on "the device"
        assert torch.equal(grad, before)  # out of place: the input is left alone
    FAKE.fake_gpu_clear_log()
    assert hvd.synchronize(hvd.broadcast_async_(weights, 0, name="weights")) is weights
    lines = log()
    # Broadcast moves bytes: 3 float64 are 24 ncclUint8.
    assert any(line.startswith("ncclBroadcast n=24 type=1 root=0") for line in lines), lines
    assert lines[-2].startswith("cudaStreamWaitEvent S1 "), lines
    print(f"rank {hvd.rank()} OK", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
