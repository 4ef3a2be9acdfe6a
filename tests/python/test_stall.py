"""The stall inspector (HOROVOD_STALL_CHECK_TIME_SECONDS, ..._SHUTDOWN_TIME_SECONDS,
HOROVOD_STALL_CHECK_DISABLE) under kolorun -np 2 and 3: one rank holds back a tensor."""

import pytest

from conftest import run_job

WARNING = ("One or more tensors were submitted to be reduced, gathered or broadcasted by subset "
           "of ranks and are waiting for remainder of ranks for more than 1 seconds.")


@pytest.mark.parametrize("np_", [2, 3])
def test_stall_warning_names_the_missing_rank_and_tensor(np_):
    env = {"HOROVOD_STALL_CHECK_TIME_SECONDS": "1"}
    result = run_job(np_, "stall.py", "warn", env=env, timeout=60)
    result.assert_ok(np_)
    lines = result.lines_of(0, "stderr")
    assert any(WARNING in line for line in lines), result.output
    assert "Missing ranks:" in lines, result.output
    assert "1: [stalled]" in lines, result.output
    # Only rank 0 (the coordinator) inspects.
    for rank in range(1, np_):
        assert not any("Missing ranks" in line for line in result.lines_of(rank, "stderr"))


@pytest.mark.parametrize("np_", [2, 3])
def test_stall_shutdown_fails_the_stalled_ops_on_every_rank(np_):
    env = {"HOROVOD_STALL_CHECK_TIME_SECONDS": "1", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3"}
    result = run_job(np_, "stall.py", "shutdown", env=env, timeout=60)
    result.assert_ok(np_)  # each rank checked its own error message
    for rank in range(np_):
        assert any("error:" in line for line in result.lines_of(rank)), result.output


def test_stall_check_disabled_by_kolorun_flag():
    result = run_job(2, "stall.py", "warn", launcher_args=(
        "--no-stall-check", "--stall-check-warning-time-seconds", "1"), timeout=60)
    result.assert_ok(2)
    assert "Missing ranks" not in result.output


def test_stall_times_from_kolorun_flags():
    result = run_job(3, "stall.py", "shutdown", launcher_args=(
        "--stall-check-warning-time-seconds", "1", "--stall-check-shutdown-time-seconds", "2"),
        timeout=60)
    result.assert_ok(3)
    assert "2 seconds (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)" in result.output
