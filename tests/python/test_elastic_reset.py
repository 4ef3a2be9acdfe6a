"""hvd.elastic.run on 2 and 3 ranks under plain kolorun (fixed membership): a failure inside a
step rolls every rank back to the last commit, a host-change notice resets without rollback,
and either way training ends bitwise identical to an undisturbed run, with each sample trained
once per epoch and equal state on all ranks after every reset (tests/python/workers/
elastic_train.py checks those on every rank). Membership changes under kolorun's elastic mode
are tests/elastic/'s."""

import re

import pytest

from conftest import run_job

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")


def train(np, tmp_path, *faults):
    marker = tmp_path / "markers"
    marker.mkdir(parents=True, exist_ok=True)
    result = run_job(np, "elastic_train.py", "--marker-dir", str(marker), *faults, timeout=180)
    result.assert_ok(np)
    out = result.lines_of(0)
    final = [line for line in out if line.startswith("FINAL")]
    assert len(final) == 1, result.output
    assert [line for line in out if line.startswith("EPOCH")] == [
        f"EPOCH {e} exactly-once size={np}" for e in range(2)], result.output
    return final[0], out, result.output


@pytest.mark.parametrize("np,faults", [
    (3, ("--raise", "0:4:2", "--hosts-update", "1:13")),
    (2, ("--raise", "1:16:0",)),
])
def test_reset_resumes_from_the_last_commit_bitwise(tmp_path, np, faults):
    undisturbed, _, _ = train(np, tmp_path / "plain")
    final, out, output = train(np, tmp_path / "faulty", *faults)
    assert final == undisturbed, output
    syncs = [line for line in out if line.startswith("SYNC")]
    assert len(syncs) == 1 + len(faults) // 2, output
    # Resumed at the commit before the failing step, after a hosts change at the next one.
    expected_steps = [0] + [int(f.split(":")[1]) + (1 if flag == "--hosts-update" else 0)
                            for flag, f in zip(faults[::2], faults[1::2])]
    assert [int(re.search(r"step=(\d+)", s).group(1)) for s in syncs] == expected_steps, output
    assert out.count(f"CALLBACK size={np}") == len(faults) // 2, output
    assert f"resetting (rank 0 of {np})" in output


# What a CUDA model changes in a reset, played on the CPU (the GPU itself: test_gpu_faults.py,
# on a lent device): the ranks compare their GPUs before each session's first global operation,
# the gradients' hooks submit from the autograd engine's device thread while the caller waits in
# backward(), and the tensors take the asynchronous host path or the shared-GPU protocol (each
# played on host memory by KOLO_STAGE_THROUGH_HOST).
# np 2 as the two CUDA resets that waited on the H200 (the async host path: the elastic job's;
# the shared protocol: plain kolorun's), np 3 for the odd size; CI's time keeps it to three.
@pytest.mark.parametrize("np,path", [(2, "async"), (2, "shared"), (3, "async")])
def test_reset_with_gpu_paths_played_on_the_host(tmp_path, np, path):
    marker = tmp_path / "markers"
    marker.mkdir()
    result = run_job(np, "elastic_train.py", "--marker-dir", str(marker), "--backward-thread",
                     "--gpu-exchange", "--raise", f"0:4:{np - 1}", timeout=120,
                     env={"KOLO_STAGE_THROUGH_HOST": path, "KOLO_PEER_TIMEOUT": "5"})
    result.assert_ok(np)
    out = result.lines_of(0)
    assert [int(re.search(r"step=(\d+)", s).group(1)) for s in out if s.startswith("SYNC")] == \
        [0, 4], result.output
    assert out.count(f"GPU-TABLE rows={np}") == 2, result.output
    # Every committed step's backward ran on the worker's backward thread (and the failed
    # step's, where rank 0 reached it before the failure).
    runs = [int(line.split("=")[1]) for line in out if line.startswith("BACKWARD-THREAD")]
    steps = [int(line.split("steps=")[1]) for line in out if line.startswith("FINAL")]
    assert len(runs) == 1 and len(steps) == 1 and steps[0] <= runs[0] <= steps[0] + 1, \
        result.output
    if path == "shared":  # the last session's allreduces were summed by the shared protocol
        batches = [int(line.split()[1]) for line in out if line.startswith("SHARED-BATCHES")]
        assert len(batches) == 1 and batches[0] > 0, result.output
