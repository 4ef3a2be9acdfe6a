"""Allreduce among ranks sharing one GPU (kolo/torch/shared_gpu.py) without a GPU: when the path
is chosen and why not (gpu_path.py, facts injected), the reductions and the messages, and the
whole protocol on 2 and 3 ranks played on host memory (KOLO_STAGE_THROUGH_HOST=shared: mailboxes
in /dev/shm). tests/python/test_gpu_cuda.py runs the same worker on a real GPU."""

from pathlib import Path

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

from kolo import _core  # noqa: E402
from kolo.exceptions import KoloError  # noqa: E402
from kolo.torch import gpu_path, shared_gpu, shared_gpu_calls, shared_gpu_reduce  # noqa: E402
from kolo.torch import shared_gpu_handshake as handshake  # noqa: E402

ONE_GPU = (("a", "GPU-0"), ("a", "GPU-0"))
FACTS = dict(device_type="cuda", cuda_usable=True, nccl_backend_built=True, nccl_loaded=True,
             gpus=ONE_GPU, ipc_unavailable="")


def choices(**changes) -> dict:
    return gpu_path.choose(gpu_path.GpuFacts(**{**FACTS, **changes}))


# ---- the choice ----


def test_ranks_sharing_one_gpu_sum_allreduce_on_it_and_stage_the_rest():
    chosen = choices()
    assert chosen["allreduce"].path == gpu_path.SHARED_GPU
    assert "every rank shares one GPU (GPU-0 on a)" in chosen["allreduce"].reason
    assert {chosen[op].path for op in gpu_path.OPERATIONS if op != "allreduce"} == {
        gpu_path.ASYNC_HOST}
    text = gpu_path.warning_text(chosen, "cuda")
    assert "allreduce: the shared GPU path" in text and "CUDA IPC" in text, text


def test_without_nccl_the_shared_gpu_still_sums():
    assert choices(nccl_loaded=False)["allreduce"].path == gpu_path.SHARED_GPU
    assert choices(nccl_backend_built=False)["allreduce"].path == gpu_path.SHARED_GPU


@pytest.mark.parametrize("changes,why", [
    (dict(env={"KOLO_ELASTIC": "1"}), "an elastic job keeps its reductions off"),
    (dict(ipc_unavailable="the CUDA runtime at x lacks cudaIpcGetMemHandle"), "no CUDA IPC (the "
     "CUDA runtime at x lacks"),
])
def test_elastic_jobs_and_runtimes_without_ipc_take_the_host_path_saying_why(changes, why):
    chosen = choices(**changes)
    assert {c.path for c in chosen.values()} == {gpu_path.ASYNC_HOST}
    assert why in chosen["allreduce"].reason, chosen["allreduce"].reason
    # One reason for every operation: the warning stays one line per path.
    assert len(set(chosen.values())) == 1


def test_a_gpu_shared_by_some_ranks_only_is_not_summed_on():
    four_on_two = (("a", "GPU-0"), ("a", "GPU-0"), ("a", "GPU-1"), ("a", "GPU-1"))
    assert choices(gpus=four_on_two)["allreduce"].path == gpu_path.ASYNC_HOST
    assert choices(gpus=(("a", "GPU-0"), ("b", "GPU-0")))["allreduce"].path == gpu_path.NCCL
    assert gpu_path.one_shared_gpu(ONE_GPU) == ("a", "GPU-0")
    assert gpu_path.one_shared_gpu((("a", "GPU-0"),)) is None  # one rank shares nothing
    assert gpu_path.one_shared_gpu((("a", ""), ("a", ""))) is None  # no GPU chosen yet


def test_the_variables_still_decide():
    asked_host = choices(env={"HOROVOD_GPU_ALLREDUCE": "MPI"})["allreduce"]
    assert asked_host == gpu_path.PathChoice(gpu_path.ASYNC_HOST, "host collectives, as asked")
    asked_nccl = choices(env={"HOROVOD_GPU_OPERATIONS": "NCCL"})["allreduce"]
    assert asked_nccl.path == gpu_path.SHARED_GPU
    assert asked_nccl.reason.startswith("NCCL was asked for, but NCCL refuses two ranks on one "
                                        "GPU; every rank shares"), asked_nccl.reason


# ---- what the path computes and says ----


def entry(rank, dtype=0, shape=(4,), reduction=_core.REDUCE_SUM):
    return handshake.Entry(rank, 0, 1 << 16, 0, 16, dtype, reduction, shape, 0, 0,
                             (b"", b"", b""))


def test_disagreeing_ranks_are_named_as_the_core_names_them():
    with pytest.raises(KoloError) as error:
        handshake.check_agreement("w", [entry(0), entry(1, shape=(5,)), entry(2)])
    assert str(error.value) == ("Mismatched shape for tensor 'w': rank 0 and rank 2 submitted "
                                "[4], rank 1 submitted [5]")
    with pytest.raises(KoloError, match=r"Mismatched dtype for tensor 'w': rank 0 submitted "
                                        r"float16, ranks 1-3 submitted float32"):
        handshake.check_agreement("w", [entry(0, dtype=0)] + [entry(r, dtype=2)
                                                               for r in (1, 2, 3)])
    with pytest.raises(KoloError, match="Mismatched reduce op for tensor 'w': rank 0 submitted "
                                        "sum, rank 1 submitted max"):
        handshake.check_agreement("w", [entry(0), entry(1, reduction=_core.REDUCE_MAX)])
    handshake.check_agreement("w", [entry(0), entry(1)])  # agreeing ranks pass


def test_ranks_text_matches_the_core():
    assert handshake.ranks_text([3]) == "rank 3"
    assert handshake.ranks_text([2, 0]) == "rank 0 and rank 2"
    assert handshake.ranks_text([0, 1, 2, 3, 5, 7]) == "ranks 0-3, 5 and 7"
    assert handshake.ranks_text([0, 1, 2]) == "ranks 0-2"


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize("reduction,want", [
    (_core.REDUCE_SUM, [9, -3]), (_core.REDUCE_AVERAGE, [3, -1]), (_core.REDUCE_MIN, [2, -4]),
    (_core.REDUCE_MAX, [4, 2]), (_core.REDUCE_PRODUCT, [24, 8])])
def test_the_reductions_in_rank_order(reduction, want, dtype):
    regions = [torch.tensor(v, dtype=dtype) for v in ([2, -1], [3, -4], [4, 2])]
    result = torch.empty(2, dtype=dtype)
    shared_gpu_reduce.reduce_all([shared_gpu_reduce.Sum(regions, result, reduction, 3, False)])
    assert result.tolist() == want


def test_integer_average_truncates_and_joined_ranks_count_as_zeros():
    Sum = shared_gpu_reduce.Sum
    result = torch.empty(2, dtype=torch.int32)
    maxima, minima, total = torch.empty(2), torch.empty(2), torch.empty(2)
    shared_gpu_reduce.reduce_all([
        Sum([torch.tensor([7, -7], dtype=torch.int32)], result, _core.REDUCE_AVERAGE, 2, True),
        Sum([torch.tensor([-2.0, 5.0])], maxima, _core.REDUCE_MAX, 2, True),
        Sum([torch.tensor([-2.0, 5.0])], minima, _core.REDUCE_MIN, 2, True),
        Sum([torch.tensor([-2.0, 5.0])], total, _core.REDUCE_SUM, 2, True)])
    assert result.tolist() == [3, -3]  # a joined rank's zeros: divided by both members
    assert maxima.tolist() == [0.0, 5.0]
    assert minima.tolist() == [-2.0, 0.0]
    assert total.tolist() == [-2.0, 5.0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_a_batch_gives_the_bits_of_each_operation_alone(dtype):
    """Ranks batch their operations differently (what each found done at its synchronize); the
    bits must not depend on it: each operation summed alone equals the same in a batch, for
    every reduction and list shape (several dtypes, rank counts and averages in one batch)."""
    Sum = shared_gpu_reduce.Sum
    generator = torch.Generator().manual_seed(3)
    shapes, plans = [(7,), (3, 5), (1000,), (2, 2, 9)], []
    for k, shape in enumerate(shapes * 3):
        ranks = 2 + k % 3
        regions = [torch.randn(shape, generator=generator).to(dtype) for _ in range(ranks)]
        reduction = (_core.REDUCE_SUM, _core.REDUCE_AVERAGE, _core.REDUCE_MAX)[k % 3]
        plans.append((regions, reduction, ranks + k % 2))
    alone = []
    for regions, reduction, count in plans:
        result = torch.empty_like(regions[0])
        shared_gpu_reduce.reduce_all([Sum(regions, result, reduction, count, False)])
        alone.append(result)
    together = [torch.empty_like(regions[0]) for regions, _, _ in plans]
    shared_gpu_reduce.reduce_all([Sum(regions, result, reduction, count, False)
                                  for (regions, reduction, count), result in zip(plans, together)])
    bits = torch.int32 if dtype == torch.float32 else torch.int16
    for (regions, reduction, _), one, batched in zip(plans, alone, together):
        assert torch.equal(one.view(bits), batched.view(bits))
        if reduction == _core.REDUCE_SUM:  # in rank order, as the other paths sum
            want = regions[0].clone()
            for region in regions[1:]:
                want += region
            assert torch.equal(batched, want)


def test_only_what_the_sum_computes_is_taken(monkeypatch):
    monkeypatch.setattr(shared_gpu, "PLAYED_ON_HOST", True)
    takes = shared_gpu.takes
    assert takes(torch.ones(3), None, _core.REDUCE_SUM, 1.0)
    assert not takes(torch.ones(3), None, _core.REDUCE_ADASUM, 1.0)
    assert not takes(torch.ones(3), None, _core.REDUCE_SUM, 0.5)  # scaling left to the core
    assert not takes(torch.ones(3, dtype=torch.bool), None, _core.REDUCE_SUM, 1.0)
    assert not takes(torch.ones(0), None, _core.REDUCE_SUM, 1.0)
    assert not takes(torch.ones(4, 4).t(), None, _core.REDUCE_SUM, 1.0)  # in place, strided
    assert takes(torch.ones(4, 4).t(), torch.empty(4, 4), _core.REDUCE_SUM, 1.0)
    monkeypatch.setattr(shared_gpu, "PLAYED_ON_HOST", False)
    assert not takes(torch.ones(3), None, _core.REDUCE_SUM, 1.0)  # a CPU tensor, really


def test_a_slot_reads_back_as_written():
    raw = handshake.pack(2, 1, 1 << 20, 512, 24, torch.int32, _core.REDUCE_MAX, (2, 3), 6, 9, 7,
                         b"m" * 64 + b"r" * 64 + b"d" * 64)
    assert len(raw) == handshake.PAYLOAD_BYTES
    assert handshake.parse(raw) == handshake.Entry(
        2, 1, 1 << 20, 512, 24, handshake.DTYPE_CODES[torch.int32], _core.REDUCE_MAX, (2, 3), 9,
        7, (b"m" * 64, b"r" * 64, b"d" * 64))


def test_a_group_is_one_slot_whose_digest_names_its_list():
    listed = [(2, (3, 2)), (0, (5,)), (2, (0,))]
    digest = handshake.group_digest(listed)
    raw = handshake.pack(1, 0, 1 << 20, 256, 1024, torch.float32, _core.REDUCE_SUM, (), 11, 4, 4,
                         bytes(192), members=3, digest=digest)
    got = handshake.parse(raw)
    assert (got.members, got.digest, got.shape) == (3, digest, ())
    assert handshake.group_digest(list(listed)) == digest  # the same list, the same digest
    assert handshake.group_digest([(2, (2, 3))] + listed[1:]) != digest  # a shape differs
    assert handshake.group_digest([(3, (3, 2))] + listed[1:]) != digest  # a dtype differs
    assert handshake.group_digest(listed[:2]) != digest


def test_a_group_whose_lists_differ_is_named():
    def member(rank, members=2, digest=7):
        return handshake.Entry(rank, 0, 1 << 16, 0, 512, 2, _core.REDUCE_SUM, (), 0, 0,
                               (b"", b"", b""), members, digest)
    with pytest.raises(KoloError) as error:
        handshake.check_agreement("g", [member(0), member(1, members=3), member(2)])
    assert str(error.value) == ("Mismatched number of tensors for tensor 'g': rank 0 and rank 2 "
                                "submitted 2, rank 1 submitted 3")
    with pytest.raises(KoloError) as error:
        handshake.check_agreement("g", [member(0), member(1, digest=-1)],
                                  lambda: "rank 0 submitted float32 [2], float32 [3]")
    assert str(error.value) == (
        "Mismatched dtypes and shapes for tensor 'g': rank 0 submitted list 00000007, rank 1 "
        "submitted list ffffffff; rank 0 submitted float32 [2], float32 [3]")
    handshake.check_agreement("g", [member(0), member(1)])


def test_a_group_is_laid_out_on_aligned_boundaries():
    from kolo.torch.shared_gpu_records import layout
    assert layout([24, 0, 256, 1], 256) == ([0, 256, 256, 512], 768)
    assert layout([], 256) == ([], 0)


def test_a_group_is_taken_when_every_member_would_be(monkeypatch):
    monkeypatch.setattr(shared_gpu, "PLAYED_ON_HOST", True)
    group = shared_gpu.takes_group
    floats = [torch.ones(3), torch.ones(0), torch.ones(2, dtype=torch.int64)]
    assert group(floats, [None] * 3, _core.REDUCE_SUM, 1.0)  # an empty member takes no room
    assert not group(floats, [None] * 3, _core.REDUCE_SUM, 2.0)
    assert not group(floats + [torch.ones(2, dtype=torch.bool)], [None] * 4, _core.REDUCE_SUM,
                     1.0)
    assert not group([torch.ones(3), torch.ones(4, 4).t()], [None] * 2, _core.REDUCE_SUM, 1.0)
    assert group([torch.ones(3), torch.ones(4, 4).t()], [None, torch.empty(4, 4)],
                 _core.REDUCE_SUM, 1.0)


def test_gradient_buckets_are_cut_in_order_under_the_cap(monkeypatch):
    from kolo.torch import gradient_buckets
    params = [torch.zeros(n) for n in (100, 200, 50, 1000, 10)]  # float32: 4 bytes each
    cut = gradient_buckets.plan(params, 1200)
    assert [[p.numel() for p in bucket] for bucket in cut] == [[100, 200], [50], [1000], [10]]
    assert gradient_buckets.plan(params, 1 << 30) == [tuple(params)]
    monkeypatch.setenv("KOLO_SHARED_GPU_BUCKET_MB", "0.5")
    assert gradient_buckets.cap_bytes() == 1 << 19
    monkeypatch.setenv("KOLO_SHARED_GPU_BUCKET_MB", "lots")
    with pytest.raises(ValueError, match="KOLO_SHARED_GPU_BUCKET_MB='lots'"):
        gradient_buckets.cap_bytes()
    monkeypatch.delenv("KOLO_SHARED_GPU_BUCKET_MB")
    assert gradient_buckets.cap_bytes() == 25 << 20
    monkeypatch.setattr(shared_gpu, "PLAYED_ON_HOST", True)
    assert gradient_buckets.applies(params, _core.REDUCE_AVERAGE, 1.0)
    assert not gradient_buckets.applies(params, _core.REDUCE_ADASUM, 1.0)
    monkeypatch.setenv("KOLO_SHARED_GPU_BUCKET_MB", "0")
    assert not gradient_buckets.applies(params, _core.REDUCE_AVERAGE, 1.0)
    monkeypatch.setattr(shared_gpu, "PLAYED_ON_HOST", False)
    monkeypatch.setenv("KOLO_SHARED_GPU_BUCKET_MB", "lots")  # not read where nothing is shared
    assert not gradient_buckets.applies(params, _core.REDUCE_AVERAGE, 1.0)


def test_a_handshake_from_something_else_is_refused():
    with pytest.raises(KoloError, match="another kolo version"):
        handshake.parse(b"\x01" * handshake.PAYLOAD_BYTES)
    assert handshake.parse(bytes(handshake.PAYLOAD_BYTES)) is None  # a joined rank


# ---- the protocol on 2 and 3 ranks ----


def leftover_mailboxes() -> set:
    return {p.name for p in Path("/dev/shm").glob("kolo-shared-*")}


@pytest.mark.parametrize("np_", [2, 3])
def test_the_protocol_on_host_memory(np_):
    before = leftover_mailboxes()
    run_job(np_, "torch_shared_gpu.py", "host", timeout=240,
            env={"KOLO_STAGE_THROUGH_HOST": "shared"}).assert_ok(np_)
    assert leftover_mailboxes() == before  # shutdown gave every mailbox back


@pytest.mark.parametrize("np_", [2, 3])
def test_horovod_semantics_on_the_shared_gpu_path(np_):
    # Average's divisor, joined ranks, grouped and scaled allreduces, as for the other paths.
    run_job(np_, "torch_horovod_semantics.py", timeout=240,
            env={"KOLO_STAGE_THROUGH_HOST": "shared"}).assert_ok(np_)


@pytest.mark.parametrize("np_,victim,fault", [(2, 1, ()), (3, 0, ()), (2, 1, ("stop",))])
def test_a_dead_or_frozen_peer_fails_the_others_naming_it(np_, victim, fault, tmp_path):
    """cuda_dead_peer.py on host memory: the survivors' shared allreduces raise
    HorovodInternalError naming the lost rank (the same worker runs on a GPU in
    test_gpu_faults.py)."""
    result = run_job(np_, "cuda_dead_peer.py", str(victim), *fault, timeout=120,
                     env={"KOLO_STAGE_THROUGH_HOST": "shared", "CUDA_DEAD_PEER_DEVICE": "cpu",
                          "KOLO_PEER_TIMEOUT": "3", "KOLO_FAILURE_GRACE_SECONDS": "15",
                          "DEAD_PEER_SYNC_DIR": str(tmp_path)})
    assert result.returncode != 0, result.output
    for rank in range(np_):
        if rank != victim:
            assert f"rank {rank} OK" in result.lines_of(rank), result.output


def test_the_path_is_tried_once_before_it_is_chosen(monkeypatch):
    """shared_gpu_calls.self_test: a mailbox exported, viewed, written and freed, an interprocess
    event's handle taken; any failure is the reason the job stays on the host path."""
    calls = []

    class Working(shared_gpu_calls.CudaSharing):
        def export(self, device, nbytes):
            calls.append(("export", device, nbytes))
            return 4096, b"h" * 64

        def view(self, pointer, nbytes, device):
            calls.append(("view", pointer, nbytes))
            return torch.empty(nbytes, dtype=torch.uint8)

        def ipc_event(self, device):
            return "event"

        def event_handle(self, event):
            calls.append(("event handle", event))
            return b"e" * 64

        def free(self, device, pointer):
            calls.append(("free", device, pointer))

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(shared_gpu_calls, "CudaSharing", Working)
    assert shared_gpu_calls.self_test() == ""
    assert calls == [("export", 3, 256), ("view", 4096, 256), ("event handle", "event"),
                     ("free", 3, 4096)]

    class NoView(Working):
        def view(self, pointer, nbytes, device):
            raise TypeError("no __cuda_array_interface__ here")

    calls.clear()
    monkeypatch.setattr(shared_gpu_calls, "CudaSharing", NoView)
    assert shared_gpu_calls.self_test() == ("its self-test failed (TypeError: no "
                                      "__cuda_array_interface__ here)")
    assert calls[-1] == ("free", 3, 4096)  # the mailbox is given back all the same
