"""Shared-memory links between ranks on one host: chosen automatically, KOLO_SHM_DISABLE=1 and a
/dev/shm too small for the rings fall back to TCP (with a warning naming the sizes), a rank
killed mid-allreduce is named by the survivors at once, and nothing is left in /dev/shm. An
idle runtime runs no negotiation cycles through the arena, yet joins those its peers begin.
Allreduce through the host's collective arena (KOLO_SHM_ALLREDUCE_BYTES picks it by size: 0 =
never), and the launcher removing what a rank killed mid-handshake left in /dev/shm."""

from __future__ import annotations

import os
import re
import time

import pytest

from conftest import run_job

SHM_ON = "same-host peer(s) on shared memory"
ARENA_ON = "shared-memory collective arena for the"
# KOLO_SHM_ALLREDUCE_BYTES: every allreduce through the arena (default), none (0: the pair links'
# ring / recursive doubling), or the small ones only.
ARENA_LIMITS = {"arena": None, "links": "0", "mixed": "4096"}


def kolo_segments() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith("kolo-")}


@pytest.fixture
def no_leak_in_dev_shm():
    """Fails the test if it leaves a kolo segment in /dev/shm."""
    before = kolo_segments()
    yield
    left = kolo_segments() - before
    if left:  # another job on this machine may be inside its init() handshake: names live ms
        time.sleep(2)
        left &= kolo_segments()
    assert not left, f"segments left in /dev/shm: {sorted(left)}"


@pytest.mark.parametrize("np_", [2, 3])
def test_same_host_ranks_use_shared_memory(np_, no_leak_in_dev_shm):
    result = run_job(np_, "shm_collectives.py", env={"KOLO_LOG_LEVEL": "debug"}, timeout=120)
    result.assert_ok(np_)
    for rank in range(np_):
        assert any(f"{np_ - 1} {SHM_ON}" in line for line in result.lines_of(rank, "stderr")), (
            result.output)


def test_shm_disable_forces_tcp(no_leak_in_dev_shm):
    result = run_job(2, "shm_collectives.py",
                     env={"KOLO_LOG_LEVEL": "debug", "KOLO_SHM_DISABLE": "1"}, timeout=120)
    result.assert_ok(2)
    assert SHM_ON not in result.output


@pytest.mark.parametrize("np_, transport", [(2, "arena"), (3, "arena"), (2, "links")])
def test_idle_ranks_run_no_cycles_yet_join_their_peers(np_, transport, tmp_path,
                                                      no_leak_in_dev_shm):
    env = {"KOLO_SHM_DISABLE": "1"} if transport == "links" else {}
    result = run_job(np_, "idle_cycles.py", transport, str(tmp_path), env=env, timeout=120)
    result.assert_ok(np_)
    for rank in range(np_):
        assert f"rank {rank} SET_OPS done" in result.lines_of(rank), result.output


def test_dev_shm_too_small_falls_back_to_tcp_with_a_warning(no_leak_in_dev_shm):
    # Rings of 1 TiB cannot fit: the same check that catches Docker's 64 MB /dev/shm.
    result = run_job(3, "shm_collectives.py", env={"KOLO_SHM_RING_BYTES": str(1 << 40)},
                     timeout=120)
    result.assert_ok(3)
    assert re.search(r"/dev/shm is too small .* MiB in all, .* MiB free, .* MiB needed",
                     result.output), result.output


@pytest.mark.parametrize("np_,victim", [(2, 1), (3, 0), (3, 2)])
def test_rank_killed_mid_allreduce_on_shm_is_named_at_once(np_, victim, no_leak_in_dev_shm):
    result = run_job(np_, "shm_kill_mid_allreduce.py", str(victim), timeout=60,
                     env={"KOLO_FAILURE_GRACE_SECONDS": "15"})
    for rank in range(np_):
        if rank != victim:
            assert f"rank {rank} OK" in result.lines_of(rank), result.output
    assert result.returncode != 0


@pytest.mark.parametrize("np_", [3, 4])
@pytest.mark.parametrize("mode", ["hierarchical", "flat"])
def test_fake_hosts_shm_inside_tcp_across_allreduce_exact(np_, mode, no_leak_in_dev_shm):
    result = run_job(np_, "shm_fake_hosts.py", mode, env={"KOLO_LOG_LEVEL": "debug"}, timeout=120)
    result.assert_ok(np_)
    for rank in range(np_):
        shm_peers = 1 if rank < np_ - np_ % 2 else 0  # the odd rank out is alone on its host
        assert any(f"{shm_peers} {SHM_ON}" in line for line in result.lines_of(rank, "stderr")), (
            result.output)


@pytest.mark.parametrize("np_,hosts", [(2, "localhost:1,127.0.0.1:1"),
                                       (3, "localhost:2,127.0.0.1:1")])
def test_hosts_named_apart_on_one_machine_share_memory(np_, hosts, no_leak_in_dev_shm):
    # Horovod's benchmark on a one-GPU machine runs as two one-slot "hosts" of this machine:
    # their numbers follow the names (local size 1 and 2), their bytes go through shared memory.
    result = run_job(np_, "shm_fake_hosts.py", "named", env={"KOLO_LOG_LEVEL": "debug"},
                     timeout=120, launcher_args=("-H", hosts))
    result.assert_ok(np_)
    for rank in range(np_):
        assert any(f"{np_ - 1} {SHM_ON}" in line for line in result.lines_of(rank, "stderr")), (
            result.output)
        assert any(f"arena for the {np_} ranks" in line
                   for line in result.lines_of(rank, "stderr")), result.output


@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("path", sorted(ARENA_LIMITS))
def test_collectives_on_each_allreduce_path(np_, path, no_leak_in_dev_shm):
    env = {"KOLO_LOG_LEVEL": "debug"}
    if ARENA_LIMITS[path] is not None:
        env["KOLO_SHM_ALLREDUCE_BYTES"] = ARENA_LIMITS[path]
    result = run_job(np_, "shm_collectives.py", env=env, timeout=120)
    result.assert_ok(np_)
    for rank in range(np_):
        arena_lines = [line for line in result.lines_of(rank, "stderr") if ARENA_ON in line]
        if path == "links":
            assert not arena_lines, result.output
        else:
            assert any(f"for the {np_} ranks of this host" in line for line in arena_lines), (
                result.output)


@pytest.mark.parametrize("np_,victim", [(2, 0), (3, 1)])
@pytest.mark.parametrize("path", ["arena", "links"])
def test_rank_killed_mid_allreduce_named_on_each_path(np_, victim, path, no_leak_in_dev_shm):
    env = {"KOLO_FAILURE_GRACE_SECONDS": "15"}
    if ARENA_LIMITS[path] is not None:
        env["KOLO_SHM_ALLREDUCE_BYTES"] = ARENA_LIMITS[path]
    # The large size takes the arena only where the host has a CPU per rank; the small one always.
    for count in (4 << 20, 1000):
        result = run_job(np_, "shm_kill_mid_allreduce.py", str(victim), str(count), timeout=60,
                         env=env)
        for rank in range(np_):
            if rank != victim:
                assert f"rank {rank} OK" in result.lines_of(rank), result.output
        assert result.returncode != 0


@pytest.mark.parametrize("np_", [2, 3])
def test_launcher_removes_what_a_killed_rank_left_in_dev_shm(np_, no_leak_in_dev_shm):
    result = run_job(np_, "shm_leave_leftover.py", timeout=60,
                     env={"KOLO_FAILURE_GRACE_SECONDS": "1"})
    assert any("rank 0 left kolo-" in line for line in result.lines_of(0)), result.output
    assert result.returncode != 0
