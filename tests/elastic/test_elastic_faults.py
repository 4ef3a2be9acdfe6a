"""Issue 11, points 3 and 4: the fault cases of elastic training, each a real kolorun job on fake
hosts (127.0.0.N through fake ssh), with the deterministic training worker of
tests/python/workers/elastic_train.py. That worker asserts on every rank that each epoch trains
every sample exactly once past the last commit and that all ranks hold bitwise-identical model
and optimizer state, with the learning rate rescaled to the new size, after each reset; here the
test checks the sequence of sizes, where training resumed, who stayed rank 0, and that the job
ended on its own (no case may hang)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys

from elastic_harness import WORKERS, Discovery, ElasticJob

PEER_TIMEOUT = "3"


def hosts(*numbers: int) -> list[str]:
    return [f"127.0.0.{n}:1" for n in numbers]


def start(tmp_path, discovery: Discovery, np: int, min_np: int, max_np: int, *worker_args: str,
          limit: float = 240) -> tuple[ElasticJob, str]:
    script = tmp_path / "elastic_train.py"  # a unique path: how the test finds its workers
    shutil.copy(WORKERS / "elastic_train.py", script)
    markers = tmp_path / "markers"
    markers.mkdir()
    job = ElasticJob(["-np", str(np), "--min-np", str(min_np), "--max-np", str(max_np),
                      "--host-discovery-script", str(discovery.script),
                      sys.executable, str(script), "--marker-dir", str(markers), *worker_args],
                     env={"KOLO_PEER_TIMEOUT": PEER_TIMEOUT}, cwd=tmp_path, limit=limit)
    return job, str(script)


def syncs(job: ElasticJob) -> list[tuple[int, int, float]]:
    """(size, step, time) of every SYNC line of rank 0, in order."""
    out = []
    for line in job.rank_lines(0):
        match = re.match(r"SYNC size=(\d+) step=(\d+) hash=\w+ t=([\d.]+)", line)
        if match:
            out.append((int(match.group(1)), int(match.group(2)), float(match.group(3))))
    return out


def memberships(job: ElasticJob) -> list[list[str]]:
    """The worker ids in rank order at every sync."""
    return [re.search(r"members=(\S+)", line).group(1).split(",")
            for line in job.rank_lines(0) if line.startswith("SYNC")]


def assert_survivors_keep_their_order(job: ElasticJob) -> None:
    """Each round's ranks: the workers that were there before, in their old order (so the oldest
    is rank 0), then the new ones."""
    rounds = memberships(job)
    for before, after in zip(rounds, rounds[1:]):
        kept = [w for w in after if w in before]
        assert kept == [w for w in before if w in after], (before, after, job.output)
        assert after[:len(kept)] == kept, (before, after, job.output)


def assert_trained_to_the_end(job: ElasticJob, code: int, final_size: int) -> None:
    assert code == 0, f"job failed ({code}):\n{job.output}"
    epochs = [line for line in job.rank_lines(0) if line.startswith("EPOCH")]
    assert len(epochs) == 2 and epochs[-1] == f"EPOCH 1 exactly-once size={final_size}", job.output
    assert any(line.startswith("FINAL") for line in job.rank_lines(0)), job.output


def kill_time(job: ElasticJob) -> float:
    for _, line in job.lines:
        match = re.search(r"KILL SIG\w+ rank=\d+ step=\d+ t=([\d.]+)", line)
        if match:
            return float(match.group(1))
    raise AssertionError(f"no KILL line:\n{job.output}")


def test_sigkill_mid_allreduce_shrinks_3_to_2_then_a_new_host_grows_it_back(tmp_path):
    """Point 3 (SIGKILL mid-allreduce, host added) and point 4 (3 -> 2 -> 3, exactly once,
    bitwise-equal state, lr callback): rank 2 kills itself while its gradients' allreduces are in
    flight at step 6; the two others resume from commit 6 at size 2; then a fourth host appears
    and the job grows back to 3 without a rollback."""
    discovery = Discovery(tmp_path, hosts(2, 3, 4))
    job, _ = start(tmp_path, discovery, 3, 2, 3, "--samples", "96", "--step-sleep", "0.15",
                   "--kill", "0:6:2:KILL")
    job.wait_for(r"\[0\]<stdout>:SYNC size=2 step=6 ")
    discovery.set(hosts(2, 3, 5))  # 127.0.0.4 failed (blacklisted); 127.0.0.5 is new
    job.wait_for(r"\[0\]<stdout>:SYNC size=3 ")
    code = job.finish()
    assert_trained_to_the_end(job, code, 3)
    assert_survivors_keep_their_order(job)
    sizes = [(size, step) for size, step, _ in syncs(job)]
    assert [s for s, _ in sizes] == [3, 2, 3], job.output
    assert sizes[1][1] == 6, "training resumed from the last commit before the kill"
    assert sizes[2][1] > 6
    callbacks = [line for line in job.rank_lines(0) if line.startswith("CALLBACK")]
    assert callbacks[:1] == ["CALLBACK size=2"] and callbacks[-1] == "CALLBACK size=3", job.output
    reset_seconds = syncs(job)[1][2] - kill_time(job)
    print(f"\nelastic reset at np 3: SIGKILL to training resumed in {reset_seconds:.2f} s")


def test_sigstopped_worker_is_dropped_after_the_peer_timeout(tmp_path):
    """Point 3: a frozen worker (SIGSTOP) is detected by the peer timeout; the launcher kills it
    and the other two go on from the last commit."""
    discovery = Discovery(tmp_path, hosts(2, 3, 4))
    job, _ = start(tmp_path, discovery, 3, 2, 3, "--samples", "60", "--kill", "0:4:1:STOP")
    code = job.finish()
    assert_trained_to_the_end(job, code, 2)
    assert_survivors_keep_their_order(job)
    assert [(size, step) for size, step, _ in syncs(job)] == [(3, 0), (2, 4)], job.output


def test_worker_dying_during_the_reset(tmp_path):
    """Point 3: rank 2 is killed at step 4; while the others re-form the job, rank 1 is killed
    as it enters init(). The reset goes on (or is tried again, if the round was already formed)
    and rank 0 finishes alone from commit 4."""
    discovery = Discovery(tmp_path, hosts(2, 3, 4))
    job, _ = start(tmp_path, discovery, 3, 1, 3, "--samples", "60", "--step-sleep", "0.1",
                   "--kill", "0:4:2:KILL", "--die-in-reset", "1")
    line = job.lines[job.wait_for(r"DIE-IN-RESET rank=1 pid=\d+")][1]
    os.kill(int(re.search(r"pid=(\d+)", line).group(1)), signal.SIGKILL)
    code = job.finish()
    assert_trained_to_the_end(job, code, 1)
    assert_survivors_keep_their_order(job)
    assert "DIE-IN-RESET rank=1" in job.output
    sizes = syncs(job)
    assert sizes[0][:2] == (3, 0) and sizes[-1][:2] == (1, 4), job.output


def test_host_added_mid_epoch_grows_without_rollback(tmp_path):
    """Point 3: a host appears in the discovery output mid-epoch; the running workers reset at
    their next commit (HostsUpdatedInterrupt), keep their state, and the new worker receives
    rank 0's; the old workers keep ranks 0 and 1."""
    discovery = Discovery(tmp_path, hosts(2, 3))
    job, _ = start(tmp_path, discovery, 2, 2, 3, "--samples", "96", "--step-sleep", "0.15")
    job.wait_for(r"\[0\]<stdout>:SYNC size=2 step=0 ")
    discovery.set(hosts(2, 3, 4))
    code = job.finish()
    assert_trained_to_the_end(job, code, 3)
    assert_survivors_keep_their_order(job)
    sizes = syncs(job)
    assert [s for s, _, _ in sizes] == [2, 3], job.output
    assert sizes[1][1] > 0, "no rollback: training went on from where it was"
    assert "a collective failed" not in job.output, job.output


def test_host_removed_leaves_gracefully(tmp_path):
    """Point 3: a host disappears from the discovery output; its worker exits 0 at the next
    reset, the others go on at size 2 without a rollback and without a sync."""
    discovery = Discovery(tmp_path, hosts(2, 3, 4))
    job, _ = start(tmp_path, discovery, 3, 2, 3, "--samples", "96", "--step-sleep", "0.15")
    job.wait_for(r"\[0\]<stdout>:SYNC size=3 step=0 ")
    discovery.set(hosts(2, 3))
    code = job.finish()
    assert_trained_to_the_end(job, code, 2)
    assert_survivors_keep_their_order(job)
    assert [s for s, _, _ in syncs(job)] == [3, 2], job.output
    assert "a collective failed" not in job.output, job.output
    assert "left the job, exiting normally" in job.output, job.output
