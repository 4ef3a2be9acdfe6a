"""The torch front end's NCCL submit without a GPU (kolo/torch/nccl_submit.py): CPU tensors stand
for CUDA tensors through fake CUDA calls, and the core's two doors (enqueue_pointers,
finish_on_stream) are recorded, so each test sees which pointer, device and event the submit
hands over and what synchronize() makes wait instead of blocking. A CPU tensor never reaches any
of it. The route through the real core, at np 2 and 3, is the last test."""

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

import horovod.torch as hvd  # noqa: E402
from kolo import _core, _handles  # noqa: E402
from kolo.torch import gpu_path, handles, nccl_submit, staging  # noqa: E402

NCCL_EVERYWHERE = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL") for op in gpu_path.OPERATIONS}


class FakeCuda:
    """Tensors in `cuda` are CUDA tensors on device 3; every call is logged."""

    def __init__(self, *cuda):
        self.cuda = {id(t) for t in cuda}
        self.log = []
        self.stream = 0x5100
        self.events = 0

    def is_cuda(self, tensor):
        return id(tensor) in self.cuda

    def device_index(self, tensor):
        return 3

    def record_on_caller(self, device):
        self.events += 1
        event = 0xE000 + self.events
        self.log.append(("record_on_caller", device, event))
        return f"event{self.events}", event

    def caller_stream(self, device):
        self.log.append(("caller_stream", device))
        return self.stream


class FakeCore:
    """enqueue_pointers and finish_on_stream recorded; finish (the host wait) must not run."""

    def __init__(self):
        self.enqueued = []
        self.finished_on_stream = []

    def enqueue_pointers(self, *args, device_index=-1, caller_event=0):
        self.enqueued.append((args, device_index, caller_event))
        return 100 + len(self.enqueued)

    def finish_on_stream(self, handle, stream, device, name):
        self.finished_on_stream.append((handle, stream, device, name))

    @staticmethod
    def finish(handle):
        raise AssertionError(f"handle {handle}: synchronize waited on the host")


@pytest.fixture
def fakes(monkeypatch):
    """(install(*cuda tensors) -> FakeCuda, FakeCore) with NCCL chosen for every operation."""
    core = FakeCore()
    for name in ("enqueue_pointers", "finish_on_stream", "finish"):
        monkeypatch.setattr(_core, name, getattr(core, name))
    monkeypatch.setitem(staging._choices, "cuda", NCCL_EVERYWHERE)
    previous = []

    def install(*cuda):
        calls = FakeCuda(*cuda)
        previous.append(nccl_submit.use_calls(calls))
        # The CPU tensors standing for CUDA ones must not take the host pointer path.
        monkeypatch.setattr(handles, "_submit_pointers", lambda *a, **k: None)
        return calls

    yield install, core
    for calls in previous[:1]:
        nccl_submit.use_calls(calls)


def test_allreduce_hands_pointers_device_and_callers_event_and_returns_at_once(fakes):
    install, core = fakes
    tensor = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    calls = install(tensor)
    handle = hvd.allreduce_async(tensor, name="grad.w", op=hvd.Sum)  # scales: test_device_scale
    (args, device, event), = core.enqueued
    op, name, reduce_op, root, prescale, _, set_id, group_id, group_size, dtype, shape, \
        source, output, drives = args
    assert (op, name, reduce_op, prescale, set_id) == (_core.OP_ALLREDUCE, "allreduce.grad.w",
                                                       _core.REDUCE_SUM, 1.0, 0)
    assert (group_id, group_size, dtype, list(shape)) == (0, 0, _core.DTYPE_FLOAT32, [2, 3])
    assert source == tensor.data_ptr() and output != source and not drives
    assert (device, event) == (3, 0xE001)
    assert calls.log == [("record_on_caller", 3, 0xE001)]  # nothing waited at submission
    assert core.finished_on_stream == []
    calls.stream = 0x5200  # synchronize() orders the stream current then, not at submission
    result = hvd.synchronize(handle)
    assert core.finished_on_stream == [(handle, 0x5200, 3, "allreduce.grad.w")]
    assert result.data_ptr() == output and result.shape == tensor.shape


def test_in_place_allreduce_and_broadcast_write_the_callers_memory(fakes):
    install, core = fakes
    grad, weights = torch.ones(4, dtype=torch.float16), torch.zeros(5, dtype=torch.int64)
    install(grad, weights)
    h1 = hvd.allreduce_async_(grad, name="g")
    h2 = hvd.broadcast_async_(weights, root_rank=0, name="w")
    (a1, _, e1), (a2, _, e2) = core.enqueued
    assert a1[11] == a1[12] == grad.data_ptr() and a1[9] == _core.DTYPE_FLOAT16
    assert a2[0] == _core.OP_BROADCAST and a2[11] == a2[12] == weights.data_ptr()
    assert e1 != e2  # one event per submission
    assert hvd.synchronize(h1) is grad and hvd.synchronize(h2) is weights
    assert [f[0] for f in core.finished_on_stream] == [h1, h2]


def test_a_grouped_allreduce_goes_as_one_group(fakes):
    install, core = fakes
    tensors = [torch.ones(3), torch.ones(2, 2)]
    install(*tensors)
    results = hvd.synchronize(hvd.grouped_allreduce_async(tensors, name="grp"))
    group_ids = {args[7] for args, _, _ in core.enqueued}
    assert len(core.enqueued) == 2 and len(group_ids) == 1 and group_ids != {0}
    assert {args[8] for args, _, _ in core.enqueued} == {2}
    assert [r.shape for r in results] == [t.shape for t in tensors]
    assert len(core.finished_on_stream) == 2


@pytest.mark.parametrize("dtype", [torch.int16, torch.bool])
def test_types_nccl_lacks_are_not_sent_to_it(fakes, dtype):
    install, _ = fakes
    tensor = torch.ones(3, dtype=dtype)
    install(tensor)
    assert not nccl_submit.takes(tensor, _core.OP_ALLREDUCE)


def test_a_tensor_nccl_cannot_take_falls_back_to_the_async_host_path(monkeypatch):
    """NCCL chosen, but an int16 tensor (or an empty one) cannot go: staging's non-blocking path
    takes it, not the blocking copies. A meta tensor stands for the device tensor here."""
    monkeypatch.setattr(staging, "path_for", lambda device_type, op: gpu_path.NCCL)
    monkeypatch.setattr(staging, "FORCED_ASYNC", False)
    monkeypatch.setattr(staging, "_calls", staging.HostOnlyCalls())

    def blocking(tensor):
        raise AssertionError("the blocking staging took a tensor of the NCCL path's fallback")

    monkeypatch.setattr(staging, "to_host", blocking)
    monkeypatch.setattr(staging, "to_host_async",
                        lambda tensor, calls: (torch.empty(tensor.shape, dtype=tensor.dtype), "e"))
    tensor = torch.empty(3, dtype=torch.int16, device="meta")
    _, staged, _ = staging.stage(tensor, _core.OP_ALLREDUCE, None)
    assert staged.asynchronous and staged.keep == ["e"]


def test_reductions_the_nccl_path_does_not_run_stay_on_the_host(fakes):
    install, _ = fakes
    floats, ints = torch.ones(3), torch.ones(3, dtype=torch.int32)
    install(floats, ints)
    allreduce = _core.OP_ALLREDUCE
    assert nccl_submit.takes(floats, allreduce, _core.REDUCE_SUM)
    assert nccl_submit.takes(floats, allreduce, _core.REDUCE_AVERAGE, 0.5)  # one PreMulSum
    assert nccl_submit.takes(floats, allreduce, _core.REDUCE_MAX)
    assert nccl_submit.takes(ints, allreduce, _core.REDUCE_SUM)
    assert not nccl_submit.takes(floats, allreduce, _core.REDUCE_ADASUM)
    assert not nccl_submit.takes(floats, allreduce, _core.REDUCE_MAX, 2.0)
    assert not nccl_submit.takes(ints, allreduce, _core.REDUCE_SUM, 2.0)
    assert not nccl_submit.takes(ints, allreduce, _core.REDUCE_AVERAGE)
    assert nccl_submit.takes(ints, _core.OP_BROADCAST)


def test_operations_not_chosen_for_nccl_are_not_sent_to_it(fakes, monkeypatch):
    install, _ = fakes
    tensor = torch.ones(3)
    install(tensor)
    host = gpu_path.PathChoice(gpu_path.ASYNC_HOST, "as asked")
    monkeypatch.setitem(staging._choices, "cuda", {**NCCL_EVERYWHERE, "broadcast": host})
    assert nccl_submit.takes(tensor, _core.OP_ALLREDUCE)
    assert not nccl_submit.takes(tensor, _core.OP_BROADCAST)


def test_a_cpu_tensor_never_reaches_the_nccl_path(monkeypatch):
    asked = []

    class Spy(nccl_submit.CudaCalls):
        def record_on_caller(self, device):
            raise AssertionError("a CPU tensor recorded a CUDA event")

        def is_cuda(self, tensor):
            asked.append(tensor.dtype)
            return super().is_cuda(tensor)

    core = FakeCore()
    monkeypatch.setattr(_core, "enqueue_pointers", core.enqueue_pointers)
    monkeypatch.setitem(staging._choices, "cuda", NCCL_EVERYWHERE)
    previous = nccl_submit.use_calls(Spy())
    try:
        tensor = torch.ones(4)
        handles.submit(_core.OP_ALLREDUCE, "allreduce", tensor, None, "cpu.t")
        # The host pointer path took it before the NCCL path was asked anything.
        (args, device, event), = core.enqueued
        assert (device, event) == (-1, 0) and asked == []
        # A tensor the host pointer path declines (non-contiguous) is asked once, and refused.
        assert not nccl_submit.takes(torch.ones(4, 2).t(), _core.OP_ALLREDUCE)
        assert asked == [torch.float32]
    finally:
        nccl_submit.use_calls(previous)
        _handles._direct.clear()
        _handles._direct_inputs.clear()


@pytest.mark.skipif(torch.version.cuda is not None,
                    reason="needs a process where NCCL cannot be loaded (a CPU build of torch)")
@pytest.mark.parametrize("np_,op", [(2, "allreduce"), (3, "broadcast")])
def test_the_front_ends_cuda_submit_reaches_the_core_and_fails_on_every_rank(np_, op, tmp_path):
    """Through the real core where NCCL cannot be loaded: the op ends on every rank with the
    loader's reason, raised by synchronize() (finish_on_stream)."""
    result = run_job(np_, "nccl_front_end_route.py", op, str(tmp_path), timeout=60)
    result.assert_ok(np_)
    assert "NCCL not found" in result.output, result.output  # at least one rank's own reason


def stand_in_gpu_library():
    """The stand-in GPU library under the CUDA runtime's soname, from the build that made this
    kolo (dev_stage.sh's build/NAME, or scripts/setup.sh's build/cp*); None when not built."""
    from pathlib import Path

    relative = "tests/cpp/gpu_fakes/fake_gpu_device_as_cudart/libcudart.so.12"
    roots = [Path(_core.__file__).resolve().parent,
             *sorted((Path(__file__).resolve().parents[2] / "build").glob("cp*"))]
    return next((str(root / relative) for root in roots if (root / relative).exists()), None)


def stand_in_gpu_env():
    """The environment that makes the stand-in GPU library the job's CUDA runtime and NCCL;
    skips where it is not built or torch has CUDA."""
    if torch.version.cuda is not None:
        pytest.skip("the stand-in must be the process's only CUDA runtime (a CPU torch)")
    library = stand_in_gpu_library()
    if library is None:
        pytest.skip("the stand-in GPU library is built with the C++ tests (KOLO_BUILD_TESTS)")
    return {"FAKE_GPU_LIBRARY": library, "KOLO_NCCL_LIBRARY": library}


@pytest.fixture
def stand_in_gpu():
    return stand_in_gpu_env()


@pytest.mark.parametrize("np_", [1])  # np 2 and 3 run on it below (a rank dying)
def test_allreduce_and_broadcast_through_nccl_on_the_stand_in_gpu(np_, stand_in_gpu):
    run_job(np_, "nccl_fake_gpu.py", timeout=60, env=stand_in_gpu).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_a_rank_dying_inside_an_nccl_op_ends_the_survivors_op_naming_it(np_, stand_in_gpu):
    # kolorun's grace period long enough that only kolo's own detection can end the survivors'
    # wait before the test's timeout (the default, 5 s, would also end a hang).
    result = run_job(np_, "nccl_fake_gpu_peer_death.py", timeout=60, env=stand_in_gpu,
                     launcher_args=("--failure-grace-seconds", "50"))
    assert result.returncode != 0, result.output  # the dead rank's exit code
    for rank in range(np_ - 1):
        assert f"rank {rank} OK" in result.lines_of(rank), result.output


@pytest.mark.parametrize("hosts", ["localhost:2,127.0.0.1:1", "localhost:2,127.0.0.1:2"])
def test_hierarchical_allreduce_of_cuda_tensors_equals_the_flat_one(hosts, tmp_path,
                                                                    stand_in_gpu):
    """HOROVOD_HIERARCHICAL_ALLREDUCE=1 on fake hosts: NCCL inside each host, kolo across (np 3
    as 2 + 1, np 4 as 2 + 2; with one rank per host it stays flat, checked at np 2 below)."""
    np_ = sum(int(host.split(":")[1]) for host in hosts.split(","))
    result = run_job(np_, "nccl_fake_gpu_hierarchical.py", hosts, timeout=60,
                     env={**stand_in_gpu, "FAKE_GPU_SHARED_DIR": str(tmp_path),
                          "HOROVOD_HIERARCHICAL_ALLREDUCE": "1"},
                     launcher_args=("-H", hosts))
    result.assert_ok(np_)
    for rank in range(np_):
        assert f"rank {rank} path hierarchical" in result.lines_of(rank), result.output


@pytest.mark.parametrize("np_", [2, 3])
def test_cuda_tensors_in_a_process_set_then_a_barrier_then_join_with_zeros_on_the_gpu(
        np_, tmp_path, stand_in_gpu):
    """A process set's own communicator; a joined rank takes part with zeros in device memory."""
    # One rank per host with HOROVOD_HIERARCHICAL_ALLREDUCE=1 at np 2: the allreduces stay flat
    # (ncclAllReduce over every rank, which the worker's log checks see).
    hosts = "localhost:1,127.0.0.1:1" if np_ == 2 else "localhost:3"
    run_job(np_, "nccl_fake_gpu_sets_and_join.py", timeout=60,
            env={**stand_in_gpu, "FAKE_GPU_SHARED_DIR": str(tmp_path),
                 "HOROVOD_DYNAMIC_PROCESS_SETS": "1", "HOROVOD_HIERARCHICAL_ALLREDUCE": "1"},
            launcher_args=("-H", hosts)).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_a_rank_that_joins_before_any_cuda_op_takes_part_with_zeros_on_join_s_device(
        np_, tmp_path, stand_in_gpu):
    """hvd.join(0) before any CUDA op: the joined rank's communicator and zeros on device 0."""
    run_job(np_, "nccl_fake_gpu_join_first.py", "device", timeout=60,
            env={**stand_in_gpu, "FAKE_GPU_SHARED_DIR": str(tmp_path)}).assert_ok(np_)


def test_a_rank_that_joins_before_any_cuda_op_without_a_device_fails_naming_itself(
        stand_in_gpu):
    """hvd.join() before any CUDA op: no GPU for its zeros; its join names the rank."""
    # No FAKE_GPU_SHARED_DIR: the peer's allreduce does not wait for the failed rank in the
    # stand-in's communicator (a minute); its join ends when that rank has gone.
    result = run_job(2, "nccl_fake_gpu_join_first.py", "none", timeout=60,
                     env={**stand_in_gpu, "KOLO_PEER_TIMEOUT": "3"})
    assert "rank 1 OK" in result.lines_of(1), result.output
    ended = [line for line in result.lines_of(0) if line.startswith("rank 0 ended: ")]
    assert len(ended) == 1 and "rank 1 " in ended[0], result.output  # its join names the rank
