"""Process sets (hvd.ProcessSet, init(process_sets=...), add/remove_process_set, process_set= on
every op) and join() for uneven data, under kolorun on 2 and 3 ranks."""

import sys

import pytest

from conftest import run_command, run_job

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


@pytest.mark.parametrize("np_", [2, 3])
def test_init_registers_distinct_sets_maps_later_inits_and_reuses_ids(np_):
    # Horovod's semantics (horovod/common/basics.py, process_set.cc), which its own
    # test_process_sets_static.py and test_tensorflow_process_sets_dynamic.py check.
    run_job(np_, "torch_process_set_init.py", timeout=120).assert_ok(np_)


def test_tensorflow_mpi_ops_has_horovods_basics_object():
    pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu")
    script = ("import horovod.tensorflow as hvd\n"
              "hvd.init()\n"
              "assert hvd.mpi_ops._basics._get_process_set_ids_and_ranks() == {0: [0]}\n"
              "try:\n"
              "    hvd.init(process_sets=[hvd.ProcessSet([0])])\n"
              "except ValueError as error:\n"
              "    assert 'entry number 0 is a duplicate' in str(error), error\n"
              "    print('refused')\n")
    result = run_command([sys.executable, "-c", script], {"TF_CPP_MIN_LOG_LEVEL": "3"}, 120)
    assert result.returncode == 0 and "refused" in result.output, result.output
