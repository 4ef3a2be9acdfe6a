"""Mismatches, dead peers, re-init: clear errors on every rank, never a hang."""

import re

import pytest

from conftest import run_job


@pytest.mark.parametrize("np_", [2, 3])
def test_mismatches_fail_every_rank_with_names(np_):
    run_job(np_, "mismatch.py", timeout=120).assert_ok(np_)


# The bound for a collective that some ranks never submit is the stall shutdown time (off by
# default, as in Horovod: a rank may be late on purpose, e.g. rank 0 writing a checkpoint); the
# test sets it to 2 s. Everything else fails as soon as every rank has submitted.
MATRIX_ENV = {"HOROVOD_STALL_CHECK_TIME_SECONDS": "1", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "2",
              "HOROVOD_DYNAMIC_PROCESS_SETS": "1", "KOLO_PEER_TIMEOUT": "20"}


@pytest.mark.parametrize("np_", [2, 3])
def test_every_mismatch_fails_every_rank_with_horovods_classes(np_):
    run_job(np_, "mismatch_matrix.py", env=MATRIX_ENV, timeout=300).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_ranks_blocked_on_different_collectives_fail_within_the_peer_timeout(np_):
    # No stall shutdown here: the deadlock watch alone must end it, and spare a late rank.
    result = run_job(np_, "deadlock.py", "3", env={"KOLO_PEER_TIMEOUT": "3"}, timeout=120)
    result.assert_ok(np_)


@pytest.mark.parametrize("np_,victim", [(2, 1), (3, 1), (3, 0)])
def test_dead_peer_fails_survivors_within_timeout(np_, victim, tmp_path):
    result = run_job(np_, "dead_peer.py", str(victim), timeout=60,
                     env={"KOLO_PEER_TIMEOUT": "3", "KOLO_FAILURE_GRACE_SECONDS": "15",
                          "DEAD_PEER_SYNC_DIR": str(tmp_path)})
    for rank in range(np_):
        if rank != victim:
            assert f"rank {rank} OK" in result.lines_of(rank), result.output
    # The launcher reports the killed rank and exits non-zero.
    assert result.returncode != 0
    assert re.search(rf"rank {victim}\b.*(SIGKILL|signal 9)", result.output), result.output


@pytest.mark.parametrize("np_", [2, 3])
def test_frozen_peer_fails_survivors_after_peer_timeout(np_, tmp_path):
    victim = np_ - 1
    result = run_job(np_, "dead_peer.py", str(victim), "stop", timeout=60,
                     env={"KOLO_PEER_TIMEOUT": "2", "KOLO_FAILURE_GRACE_SECONDS": "1",
                          "DEAD_PEER_SYNC_DIR": str(tmp_path)})
    for rank in range(np_ - 1):
        lines = result.lines_of(rank)
        assert f"rank {rank} OK" in lines, result.output
        assert any("no progress" in line for line in lines), result.output


@pytest.mark.parametrize("np_", [2, 3])
def test_reinit_after_shutdown(np_):
    run_job(np_, "reinit.py", timeout=120).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("env", [{}, {"KOLO_CACHE_CAPACITY": "0"}, {"KOLO_FUSION_THRESHOLD": "0"}])
def test_cache_and_fusion_give_identical_results(np_, env):
    run_job(np_, "cache_and_fusion.py", env=env, timeout=180).assert_ok(np_)
