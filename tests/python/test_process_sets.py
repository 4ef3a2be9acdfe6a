"""Process sets (hvd.ProcessSet, init(process_sets=...), add/remove_process_set, process_set= on
every op) and join() for uneven data, under kolorun on 2 and 3 ranks."""

import pytest

from conftest import run_job

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")


@pytest.mark.parametrize("np_", [2, 3])
def test_process_sets(np_):
    result = run_job(np_, "torch_process_sets.py", timeout=240)
    result.assert_ok(np_)
    # The rank outside the first set ({0, 1}) got the clear error, naming set, ranks and rank.
    if np_ == 3:
        assert any("rank 2 is not a member of process set 1 (ranks [0, 1])" in line
                   for line in result.lines_of(2)), result.output


@pytest.mark.parametrize("np_", [2, 3])
def test_join_with_uneven_steps(np_):
    result = run_job(np_, "torch_join.py", timeout=240)
    result.assert_ok(np_)
    assert any("allgather while joined" in line for line in result.lines_of(np_ - 1)), \
        result.output


def test_dead_peer_fails_pending_process_set_ops(tmp_path):
    result = run_job(3, "dead_peer_process_set.py", timeout=60,
                     env={"KOLO_PEER_TIMEOUT": "3", "KOLO_FAILURE_GRACE_SECONDS": "15",
                          "DEAD_PEER_SYNC_DIR": str(tmp_path)})
    for rank in (0, 2):
        assert f"rank {rank} OK" in result.lines_of(rank), result.output
    assert any("pair." in line for line in result.lines_of(0)), result.output
    assert result.returncode != 0  # the launcher reports the killed rank
