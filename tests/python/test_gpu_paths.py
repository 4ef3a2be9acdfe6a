"""The GPU paths without a GPU: which path a device tensor takes and why (gpu_path.py, facts
injected), the order of the asynchronous host path's calls (staging.py with HostOnlyCalls), every
collective through that path on 2 and 3 ranks, and what kolo._core says about NCCL and the CUDA
runtime in this process (a CUDA build of torch brings real ones, a CPU build none)."""

import subprocess
import sys

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

from kolo.torch import gpu_path, staging  # noqa: E402

CUDA_READY = dict(device_type="cuda", cuda_usable=True, nccl_backend_built=True,
                  nccl_loaded=True, gpus=(("a", "GPU-0"), ("a", "GPU-1")))


def paths(**facts) -> dict:
    return {op: c.path for op, c in gpu_path.choose(gpu_path.GpuFacts(**facts)).items()}


def only_path(**facts) -> gpu_path.PathChoice:
    choices = set(gpu_path.choose(gpu_path.GpuFacts(**facts)).values())
    assert len(choices) == 1, choices
    return choices.pop()


# ---- the choice ----


def test_nccl_when_every_fact_allows_it():
    choices = gpu_path.choose(gpu_path.GpuFacts(**CUDA_READY))
    for op in gpu_path.OPERATIONS:
        assert choices[op] == gpu_path.PathChoice(gpu_path.NCCL, "NCCL")


def test_this_version_has_no_nccl_backend():
    choice = only_path(**{**CUDA_READY, "nccl_backend_built": False})
    assert choice.path == gpu_path.ASYNC_HOST
    assert "no NCCL backend" in choice.reason


def test_nccl_that_cannot_be_loaded_gives_its_reason():
    choice = only_path(**{**CUDA_READY, "nccl_loaded": False,
                          "nccl_reason": "NCCL 2.17.3 at /x (KOLO_NCCL_LIBRARY) is too old"})
    assert choice == gpu_path.PathChoice(gpu_path.ASYNC_HOST,
                                         "NCCL 2.17.3 at /x (KOLO_NCCL_LIBRARY) is too old")


def test_ranks_sharing_a_gpu_take_the_async_host_path_naming_them():
    gpus = (("a", "GPU-0"), ("a", "GPU-1"), ("b", "GPU-0"), ("a", "GPU-1"))
    choice = only_path(**{**CUDA_READY, "gpus": gpus})
    assert choice.path == gpu_path.ASYNC_HOST
    assert "ranks 1, 3 share one GPU (GPU-1 on a)" in choice.reason, choice.reason


def test_the_same_uuid_on_two_hosts_is_not_shared():
    # UUIDs are per card; equal text on two hosts (a test's fake, or a VM image) is two GPUs.
    assert gpu_path.duplicate_gpus([("a", "GPU-0"), ("b", "GPU-0")]) == {}
    assert gpu_path.duplicate_gpus([("a", "GPU-0"), ("b", "GPU-0"), ("a", "GPU-0")]) == {
        ("a", "GPU-0"): [0, 2]}


def test_gpus_not_compared_is_not_nccl():
    assert only_path(**{**CUDA_READY, "gpus": ()}).path == gpu_path.ASYNC_HOST


@pytest.mark.parametrize("device_type", ["xpu", "mps", "xla", "privateuseone"])
def test_other_devices_keep_staging(device_type):
    choice = only_path(device_type=device_type)
    assert choice.path == gpu_path.STAGING
    assert choice.reason.startswith(f"{device_type} tensors are copied through host memory")


def test_cuda_tensors_without_usable_cuda_are_staged():
    assert only_path(device_type="cuda", cuda_usable=False).path == gpu_path.STAGING


def test_horovod_variables_per_operation_win_over_gpu_operations():
    env = {"HOROVOD_GPU_OPERATIONS": "NCCL", "HOROVOD_GPU_ALLGATHER": "mpi",
           "HOROVOD_GPU_BROADCAST": "Gloo"}
    assert paths(**{**CUDA_READY, "env": env}) == {
        "allreduce": gpu_path.NCCL, "allgather": gpu_path.ASYNC_HOST,
        "broadcast": gpu_path.ASYNC_HOST, "alltoall": gpu_path.NCCL,
        "reducescatter": gpu_path.NCCL}


@pytest.mark.parametrize("variable", ["HOROVOD_GPU_ALLGATHER", "HOROVOD_GPU_ALLTOALL",
                                      "HOROVOD_GPU_REDUCESCATTER"])
@pytest.mark.parametrize("value", ["MPI", "gloo"])
def test_the_allocating_ops_go_to_nccl_unless_their_variable_asks_for_the_host(variable, value):
    chosen = paths(**CUDA_READY)
    assert chosen["allgather"] == chosen["alltoall"] == chosen["reducescatter"] == gpu_path.NCCL
    env = {"HOROVOD_GPU_OPERATIONS": "NCCL", variable: value}
    op = variable.removeprefix("HOROVOD_GPU_").lower()
    chosen = paths(**{**CUDA_READY, "env": env})
    assert chosen[op] == gpu_path.ASYNC_HOST
    assert {path for name, path in chosen.items() if name != op} == {gpu_path.NCCL}


def test_kolo_variable_wins_over_horovods_and_staging_can_be_asked_for():
    env = {"HOROVOD_GPU_OPERATIONS": "NCCL", "KOLO_GPU_OPERATIONS": "staging"}
    choice = only_path(**{**CUDA_READY, "env": env})
    assert choice.path == gpu_path.STAGING


def test_nccl_asked_for_but_refused_says_so():
    env = {"HOROVOD_GPU_ALLREDUCE": "NCCL"}
    choices = gpu_path.choose(gpu_path.GpuFacts(**{**CUDA_READY, "nccl_backend_built": False,
                                                   "env": env}))
    assert choices["allreduce"].reason.startswith("NCCL was asked for, but this version")
    assert not choices["broadcast"].reason.startswith("NCCL was asked for")


def test_a_bad_value_names_the_variable_and_the_choices():
    with pytest.raises(ValueError, match=r"HOROVOD_GPU_ALLREDUCE='DDL': kolo accepts GLOO, MPI, "
                                         r"NCCL, STAGING"):
        gpu_path.choose(gpu_path.GpuFacts(**{**CUDA_READY,
                                             "env": {"HOROVOD_GPU_ALLREDUCE": "DDL"}}))


def test_one_warning_names_each_path_and_why():
    env = {"HOROVOD_GPU_BROADCAST": "MPI"}
    choices = gpu_path.choose(gpu_path.GpuFacts(**{**CUDA_READY, "env": env}))
    text = gpu_path.warning_text(choices, "cuda")
    assert text == ("kolo: cuda tensors: allreduce, allgather, alltoall, reducescatter: the nccl "
                    "path (NCCL); broadcast: the async host path (host collectives, as asked)")
    every = gpu_path.warning_text(gpu_path.choose(gpu_path.GpuFacts(device_type="xpu")), "xpu")
    assert every.startswith("kolo: xpu tensors: every operation: the staging path (")


# ---- the asynchronous host path's order, on host memory ----


def test_async_copy_to_host_is_ordered_after_the_callers_stream_and_never_waits():
    calls = staging.HostOnlyCalls()
    source = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    host, copied = staging.to_host_async(source, calls)
    assert torch.equal(host, source) and host.data_ptr() != source.data_ptr()
    assert calls.log == [
        ("record", "event1", "caller"),  # everything the caller queued before submitting
        ("wait", "kolo", "event1"),  # kolo's stream starts after it
        ("pinned_empty", (2, 3), torch.float32),
        ("copy", "kolo", host.data_ptr(), source.data_ptr()),  # the copy runs on kolo's stream
        ("keep", source.data_ptr(), "kolo"),  # the source's memory is not reused before it
        ("record", "event2", "kolo"),  # what kolo's thread waits for
    ]
    assert copied == "event2"


def test_stage_hands_the_copy_event_to_the_core_and_keeps_it(monkeypatch):
    calls = staging.HostOnlyCalls()
    monkeypatch.setattr(staging, "_calls", calls)
    monkeypatch.setattr(staging, "FORCED_ASYNC", True)
    target = torch.ones(4)
    host, staged, ready = staging.stage(target, 0, target)
    assert staged.asynchronous and staged.keep == ["event2"]
    assert calls.log[-1] == ("handed_to_core", "event2") and ready == (0, -1)
    assert staging.host_output_like(host, staged).shape == host.shape
    assert calls.log[-1] == ("pinned_empty", (4,), torch.float32)


def test_results_go_back_with_copies_on_the_callers_stream():
    calls = staging.HostOnlyCalls()
    target = torch.zeros(3, requires_grad=True)
    staged = staging.Staged(torch.device("cpu"), target, asynchronous=True)
    result = torch.tensor([1.0, 2.0, 3.0])
    assert staging._to_caller_async(result, staged, calls) is target
    assert torch.equal(target.detach(), result)
    assert calls.log == [("copy", "caller", target.data_ptr(), result.data_ptr())]

    calls.log.clear()
    fresh = staging.Staged(torch.device("cpu"), None, asynchronous=True)
    output, splits = staging._to_caller_async((result, torch.tensor([1, 2])), fresh, calls)
    assert torch.equal(output, result) and splits.tolist() == [1, 2]
    assert [entry[0] for entry in calls.log] == ["empty_on_device", "copy"] * 2
    assert all(entry[1] == "caller" for entry in calls.log if entry[0] == "copy")


def test_cpu_tensors_are_never_asked_about_a_gpu_path(monkeypatch):
    def no_choice(*_):
        raise AssertionError("a CPU tensor asked for a GPU path")

    monkeypatch.setattr(staging, "path_for", no_choice)
    monkeypatch.setattr(staging, "FORCED_ASYNC", False)
    host, staged, ready = staging.stage(torch.ones(2), 0, None)
    assert not staged.asynchronous and ready == (0, -1)


@pytest.mark.parametrize("np_", [2, 3])
def test_every_collective_through_the_async_host_path(np_):
    run_job(np_, "torch_staging.py", env={"KOLO_STAGE_THROUGH_HOST": "async"},
            timeout=180).assert_ok(np_)


def test_horovod_semantics_through_the_async_host_path():
    result = run_job(2, "torch_horovod_semantics.py", env={"KOLO_STAGE_THROUGH_HOST": "async"},
                     timeout=240)
    result.assert_ok(2)


# ---- what the process has ----


def probe(code: str, env: dict | None = None) -> str:
    import os

    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=180, env=full_env)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


NCCL_PROBE = """
import torch, kolo._core as core, horovod.torch as hvd
status = core.nccl_status()
mapped = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libnccl' in l})
print(status['loaded'], status['origin'], status['path'] in mapped, status['version_string'],
      sep='|')
print(hvd.nccl_built(), hvd.cuda_built())
print(status['reason'])
"""


def test_nccl_status_tells_the_truth_for_this_process():
    lines = probe(NCCL_PROBE).splitlines()
    if torch.version.cuda is None:
        # A CPU build of torch loads no NCCL; this machine has none either (else skip).
        if lines[0].startswith("True"):
            pytest.skip("this machine has a system libnccl.so.2")
        assert lines[0].startswith("False|"), lines
        assert lines[2].startswith("NCCL not found"), lines
        assert lines[1] == "False False", lines  # whatever CUDA runtime the machine has
    else:
        # torch's CUDA build loaded nvidia-nccl's libnccl.so.2: kolo must use that very file.
        loaded, origin, mapped, version = lines[0].split("|")
        assert loaded == "True" and origin == "already loaded by the process", lines
        assert mapped == "True", lines
        assert version.startswith("2."), lines
        # NCCL and torch's CUDA runtime are found: nccl_built() is True; cuda_built() also
        # needs a usable device.
        assert lines[1] == f"True {torch.cuda.is_available()}", lines


def test_a_missing_named_nccl_is_reported_when_the_process_has_none():
    if torch.version.cuda is not None:
        pytest.skip("torch's CUDA build has loaded its NCCL: that one wins over the setting")
    out = probe("import kolo._core as c; print(c.nccl_status()['reason'])",
                {"KOLO_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"})
    assert "/nonexistent/libnccl.so.2 (KOLO_NCCL_LIBRARY)" in out, out


def test_the_process_nccl_wins_over_a_named_one():
    if torch.version.cuda is None:
        pytest.skip("needs torch's CUDA build (it loads nvidia-nccl's libnccl.so.2)")
    out = probe("import torch, kolo._core as c; s = c.nccl_status(); print(s['origin'])",
                {"KOLO_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"})
    assert out.strip() == "already loaded by the process", out


# ---- the ranks' GPUs, compared per host ----


def test_gpus_are_gathered_as_host_uuid_and_nccl_in_rank_order():
    sent = []

    def allgather(mine):
        sent.append(mine)
        return [("a", "GPU-0", True), mine, ["b", "GPU-0", True]]  # as allgather_object does

    table = gpu_path.gather_gpus(("a", "GPU-1", True), allgather)
    assert sent == [("a", "GPU-1", True)]
    assert table == [("a", "GPU-0", True), ("a", "GPU-1", True), ("b", "GPU-0", True)]
    facts = gpu_path.facts_from_table(table, 1, "", device_type="cuda", cuda_usable=True,
                                      nccl_backend_built=True)
    assert facts.gpus == (("a", "GPU-0"), ("a", "GPU-1"), ("b", "GPU-0")) and facts.nccl_loaded
    assert gpu_path.duplicate_gpus(facts.gpus) == {}
    assert only_path(**facts.__dict__).path == gpu_path.NCCL


LOCAL = dict(device_type="cuda", cuda_usable=True, nccl_backend_built=True)


def test_two_ranks_reporting_one_gpu_take_the_async_host_path_with_one_warning():
    table = gpu_path.gather_gpus(("h", "GPU-same", True), lambda mine: [mine, mine])
    choices = gpu_path.choose(gpu_path.facts_from_table(table, 0, "", **LOCAL))
    assert {c.path for c in choices.values()} == {gpu_path.ASYNC_HOST}
    text = gpu_path.warning_text(choices, "cuda")
    assert text.count("async host path") == 1, text
    assert "ranks 0, 1 share one GPU (GPU-same on h)" in text, text


def test_nccl_missing_on_one_rank_takes_every_rank_to_the_host_path_naming_it():
    # Every rank must choose alike: rank 0, which loaded NCCL, too.
    table = [("a", "GPU-0", True), ("b", "GPU-0", False), ("c", "GPU-0", True)]
    for rank in (0, 2):
        choice = only_path(**gpu_path.facts_from_table(table, rank, "", **LOCAL).__dict__)
        assert choice == gpu_path.PathChoice(gpu_path.ASYNC_HOST, "rank 1 cannot load NCCL")
    # The rank that could not load it gives its loader's own reason.
    choice = only_path(**gpu_path.facts_from_table(table, 1, "NCCL not found: x", **LOCAL).__dict__)
    assert choice.reason == "NCCL not found: x"


def test_a_rank_without_a_chosen_gpu_keeps_nccl_away_naming_it():
    table = [("a", "GPU-0", True), ("a", "", True), ("a", "", True)]
    assert gpu_path.unchosen(table) == [1, 2]
    choice = only_path(**gpu_path.facts_from_table(table, 0, "", **LOCAL).__dict__)
    assert choice.path == gpu_path.ASYNC_HOST
    assert choice.reason.startswith("ranks 1, 2 had no GPU chosen"), choice.reason


def test_nothing_is_exchanged_without_cuda_or_an_nccl_backend(monkeypatch):
    from kolo import _core
    monkeypatch.setattr(staging, "_exchanged_gpus", lambda choosing: pytest.fail("exchanged"))
    monkeypatch.setattr(staging, "_cuda_present", lambda: False)
    assert staging._local_facts("cuda").gpus == ()
    staging.exchange_gpus()  # the first global op's hook: nothing to compare either
    monkeypatch.setattr(staging, "_cuda_present", lambda: True)
    monkeypatch.setattr(_core, "NCCL_BUILT", False)
    assert staging._local_facts("cuda").gpus == ()


@pytest.mark.parametrize("table,elastic,asked", [
    ([("a", "GPU-0", True), ("a", "GPU-1", True)], "", False),  # a GPU per rank: NCCL
    ([("a", "GPU-0", True), ("a", "GPU-0", True)], "", True),  # one shared GPU: summed on it
    ([("a", "GPU-0", True), ("a", "GPU-0", True)], "1", False),  # elastic: the host path
    ([("a", "GPU-0", True)], "", False),  # alone
])
def test_the_ipc_self_test_runs_only_where_the_ranks_may_sum_on_a_shared_gpu(
        monkeypatch, table, elastic, asked):
    # The self-test allocates and frees device memory and synchronizes the device, at a
    # session's first CUDA tensor: only the job that may sum on one shared GPU needs its answer.
    import kolo
    from kolo import _core
    tried = []
    monkeypatch.setattr(_core, "NCCL_BUILT", True)
    monkeypatch.setattr(staging, "_cuda_present", lambda: True)
    monkeypatch.setattr(staging, "_exchanged_gpus", lambda choosing: tuple(table))
    monkeypatch.setattr(staging, "_cuda_ipc_unavailable", lambda: tried.append(1) or "")
    monkeypatch.setattr(kolo, "rank", lambda: 0)
    monkeypatch.setenv("KOLO_ELASTIC", elastic)
    facts = staging._local_facts("cuda")
    assert len(tried) == (1 if asked else 0)
    assert gpu_path.may_share_the_gpu(facts) == asked
    choices = gpu_path.choose(facts)
    assert (choices["allreduce"].path == gpu_path.SHARED_GPU) == asked, choices


@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("scenario", ["first-op", "unchosen", "process-set", "path-first"])
def test_the_ranks_compare_gpus_before_their_first_global_op_whatever_its_device(np_, scenario):
    """Horovod's test_horovod_allreduce_cpu_gpu_error hung on the H200 (session 36): rank 0's
    first tensor of the session was a CUDA one, whose path needed the ranks' GPUs, while rank 1's
    first was a CPU one. Now every rank exchanges before its first global operation; a second
    exchange, at the first CUDA tensor, only where a rank had chosen no GPU at the first."""
    result = run_job(np_, "gpu_exchange_point.py", scenario, timeout=90,
                     env={"KOLO_PEER_TIMEOUT": "10"})
    result.assert_ok(np_)
    # first-op and process-set: one exchange in each of two sessions; unchosen: two; path-first:
    # one
    times = 1 if scenario == "path-first" else 2
    for rank in range(np_):
        assert f"rank {rank} exchanged {times} times" in result.output, result.output


def test_the_path_is_decided_again_in_every_session(monkeypatch):
    # An elastic reset re-forms the job: after it, ranks that shared a GPU may be alone on theirs
    # (and a worker that joins compares GPUs at its first CUDA tensor, so its peers must too).
    import kolo
    sessions = iter([("GPU-same", "GPU-same"), ("GPU-0", "GPU-1")])

    def facts(device_type):
        gpus = tuple(("h", uuid) for uuid in next(sessions))
        return gpu_path.GpuFacts(**{**CUDA_READY, "gpus": gpus})

    monkeypatch.setattr(staging, "_local_facts", facts)
    monkeypatch.setattr(staging, "_warn_once", lambda text: None)
    seen = []
    for _ in range(2):
        kolo.init()
        try:
            seen.append(staging.path_for("cuda", kolo._core.OP_ALLREDUCE))
            assert staging.path_for("cuda", kolo._core.OP_ALLREDUCE) == seen[-1]  # cached
        finally:
            kolo.shutdown()
    assert seen == [gpu_path.ASYNC_HOST, gpu_path.NCCL]


# ---- the NCCL submit's route through the core ----


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="NCCL loads with CUDA torch here and would read these fake device "
                           "pointers; the route is shown on the GPU by nccl_on_device_test and "
                           "scripts/device_probe.py")
@pytest.mark.parametrize("np_", [2, 3])
def test_cuda_submit_reaches_the_nccl_path(np_, tmp_path):
    """enqueue_pointers with a device index hands the executor a CUDA request (it fails with
    NCCL's loader reason here, where NCCL cannot be loaded, instead of reading host memory), and
    refuses one without the caller's event, naming the tensor."""
    result = run_job(np_, "cuda_submit_route.py", str(tmp_path), timeout=60)
    result.assert_ok(np_)
    assert "NCCL not found" in result.output, result.output  # at least one rank's own reason
