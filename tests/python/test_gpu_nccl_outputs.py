"""Allgather, alltoall and reducescatter of CUDA tensors on the NCCL path, whose output the front
end allocates when kolo's thread asks (kolo/torch/nccl_submit.py's submit_allocating,
core/executor_device_outputs.cc). With fake CUDA calls and the core's doors recorded: one event
per submission and no GPU wait, the allocator's tensor is the result, and what still takes the
host path. On the stand-in GPU library loaded as CUDA runtime and NCCL: every op end to end at
np 1, and an allocator that raises at np 2 and 3."""

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

import horovod.torch as hvd  # noqa: E402
from kolo import _core  # noqa: E402
from kolo.torch import gpu_path, nccl_submit, staging  # noqa: E402
from test_gpu_nccl_submit import NCCL_EVERYWHERE, FakeCuda  # noqa: E402
from test_gpu_nccl_submit import stand_in_gpu_env as _stand_in  # noqa: E402


class AllocatingCuda(FakeCuda):
    def mark(self, *tensors):
        """These tensors pass for CUDA tensors (on device 3)."""
        self.cuda.update(id(t) for t in tensors)
        return self

    def allocate(self, shape, dtype, device):
        self.log.append(("allocate", list(shape), dtype, device))
        return torch.zeros(shape, dtype=dtype)


class DeviceOutputCore:
    """enqueue_device_output and finish_on_stream recorded; the host waits must not run."""

    def __init__(self):
        self.enqueued = []
        self.finished_on_stream = []

    def enqueue_device_output(self, *args):
        self.enqueued.append(args)
        return 200 + len(self.enqueued)

    def finish_on_stream(self, handle, stream, device, name):
        self.finished_on_stream.append((handle, stream, device, name))
        return [2] if name.startswith("alltoall.a2a") else []

    @staticmethod
    def finish(handle):
        raise AssertionError(f"handle {handle}: synchronize waited on the host")

    wait = finish


@pytest.fixture
def fakes(monkeypatch):
    core = DeviceOutputCore()
    for name in ("enqueue_device_output", "finish_on_stream", "finish", "wait"):
        monkeypatch.setattr(_core, name, getattr(core, name))
    monkeypatch.setitem(staging._choices, "cuda", NCCL_EVERYWHERE)
    monkeypatch.setattr(staging, "FORCED", True)  # CPU stand-ins reach the device branch
    calls = AllocatingCuda()
    previous = nccl_submit.use_calls(calls)
    yield calls, core
    nccl_submit.use_calls(previous)


def test_allgather_registers_an_allocator_records_one_event_and_never_waits(fakes):
    calls, core = fakes
    tensor = torch.ones(3, 2, dtype=torch.float16)
    calls.mark(tensor)
    handle = hvd.allgather_async(tensor, name="ag")
    (args,) = core.enqueued
    op, name, _, _, _, set_id, group_id, _, dtype, shape, source, splits, device, event, \
        allocate = args
    assert (op, name, set_id, group_id, dtype) == (_core.OP_ALLGATHER, "allgather.ag", 0, 0,
                                                   _core.DTYPE_FLOAT16)
    assert (list(shape), source, splits, device, event) == ([3, 2], tensor.data_ptr(), [], 3,
                                                            0xE001)
    assert calls.log == [("record_on_caller", 3, 0xE001)]  # one event, nothing waited
    # kolo's thread asks for the agreed shape (here: 5 rows gathered); torch allocates it and
    # an event on the allocating thread's stream tells kolo's stream when the block is free.
    pointer, ready = allocate([5, 2])
    assert calls.log[-2:] == [("allocate", [5, 2], torch.float16, 3),
                              ("record_on_caller", 3, 0xE002)] and ready == 0xE002
    calls.stream = 0x5300
    result = hvd.synchronize(handle)
    assert result.data_ptr() == pointer and result.shape == (5, 2)
    assert core.finished_on_stream == [(handle, 0x5300, 3, "allgather.ag")]
    assert calls.log[3:] == [("caller_stream", 3)]  # synchronize() only read the stream


def test_alltoall_passes_the_splits_and_returns_the_received_ones(fakes):
    calls, core = fakes
    tensor = torch.arange(6).reshape(3, 2)
    calls.mark(tensor)
    handle = hvd.alltoall_async(tensor, splits=[1, 2], name="a2a")
    (args,) = core.enqueued
    assert args[0] == _core.OP_ALLTOALL and args[11] == [1, 2]
    args[14]([2, 2])
    received, splits = hvd.synchronize(handle)
    assert received.shape == (2, 2) and splits.dtype == torch.int32 and splits.tolist() == [2]


def test_reducescatter_and_the_grouped_forms_go_to_nccl(fakes):
    calls, core = fakes
    one, two = torch.ones(4), torch.ones(2, 3, dtype=torch.float64)
    calls.mark(one, two)
    hvd.reducescatter_async(one, name="rs", op=hvd.Sum)
    assert core.enqueued[-1][0] == _core.OP_REDUCESCATTER and core.enqueued[-1][2] == hvd.Sum
    hvd.grouped_allgather_async([one, two], name="gag")
    hvd.grouped_reducescatter_async([one, two], name="grs")
    grouped = core.enqueued[1:]
    assert [a[0] for a in grouped] == [_core.OP_ALLGATHER] * 2 + [_core.OP_REDUCESCATTER] * 2
    assert grouped[0][6] == grouped[1][6] != 0 and grouped[2][6] == grouped[3][6] != 0
    assert {a[7] for a in grouped} == {2}


def test_what_nccl_cannot_take_stays_on_the_host_path(fakes, monkeypatch):
    calls, _ = fakes
    floats, shorts, flags = torch.ones(2, 2), torch.ones(2, dtype=torch.int16), torch.ones(2) > 0
    no_rows, empty_rows = torch.ones(0, 3), torch.ones(2, 0)
    calls.mark(floats, shorts, flags, no_rows, empty_rows)
    for op in (_core.OP_ALLGATHER, _core.OP_ALLTOALL, _core.OP_REDUCESCATTER):
        assert nccl_submit.takes(floats, op, hvd.Sum)
        assert not nccl_submit.takes(shorts, op, hvd.Sum)  # types NCCL lacks
        assert not nccl_submit.takes(flags, op, hvd.Sum)
        assert not nccl_submit.takes(empty_rows, op, hvd.Sum)  # rows of no elements
    # A rank with zero rows goes where its peers go: it may still receive.
    assert nccl_submit.takes(no_rows, _core.OP_ALLGATHER)
    assert nccl_submit.takes(no_rows, _core.OP_ALLTOALL)
    assert not nccl_submit.takes(no_rows, _core.OP_REDUCESCATTER)
    # The NCCL path runs reducescatter without a scale (and not an integer Average).
    assert not nccl_submit.takes(floats, _core.OP_REDUCESCATTER, hvd.Average, 0.5)
    # HOROVOD_GPU_ALLGATHER/_ALLTOALL/_REDUCESCATTER=MPI or GLOO: the async host path.
    host = gpu_path.PathChoice(gpu_path.ASYNC_HOST, "HOROVOD_GPU_ALLGATHER=MPI")
    for kind, op in (("allgather", _core.OP_ALLGATHER), ("alltoall", _core.OP_ALLTOALL),
                     ("reducescatter", _core.OP_REDUCESCATTER)):
        monkeypatch.setitem(staging._choices, "cuda", {**NCCL_EVERYWHERE, kind: host})
        assert not nccl_submit.takes(floats, op, hvd.Sum)


def test_an_integer_average_reducescatter_stays_on_the_host_path(fakes):
    calls, _ = fakes
    ints = torch.ones(4, dtype=torch.int32)
    calls.mark(ints)
    assert nccl_submit.takes(ints, _core.OP_REDUCESCATTER, hvd.Sum)
    assert not nccl_submit.takes(ints, _core.OP_REDUCESCATTER, hvd.Average)




def test_every_allocating_op_through_nccl_on_the_stand_in_gpu():
    run_job(1, "nccl_fake_gpu_outputs.py", "outputs", timeout=60, env=_stand_in()).assert_ok(1)


@pytest.mark.parametrize("np_", [2, 3])
def test_an_allocator_that_raises_fails_the_op_on_every_rank_naming_it(np_):
    run_job(np_, "nccl_fake_gpu_outputs.py", "failing", timeout=60,
            env=_stand_in()).assert_ok(np_)
