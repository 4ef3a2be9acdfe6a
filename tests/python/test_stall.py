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


@pytest.mark.parametrize("np_", [2, 3])
def test_config_file_settings_with_a_flag_overriding_it(np_, tmp_path):
    import json
    timeline = tmp_path / "timeline.json"
    config = tmp_path / "horovod.yaml"
    config.write_text(
        "params:\n  cache_capacity: 16\n"
        f"timeline:\n  filename: '{timeline}'\n  mark_cycles: false\n"
        "stall_check:\n  enabled: true\n  warning_time_seconds: 1\n"
        "  shutdown_time_seconds: 60   # overridden on the command line\n"
        "library_options:\n  num_nccl_streams: 2\n")
    result = run_job(np_, "stall.py", "shutdown", timeout=60, launcher_args=(
        "--config-file", str(config), "--stall-check-shutdown-time-seconds", "2"))
    result.assert_ok(np_)
    assert "2 seconds (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)" in result.output
    assert "--num-nccl-streams: kolo runs NCCL collectives on one stream of its own" in \
        result.output
    events = json.loads(timeline.read_text())
    assert any(e.get("args", {}).get("name") == "stalled" for e in events)


def test_config_file_errors_name_the_line():
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as config:
        config.write("stall_check:\n  warning_time_seconds: soon\n")
        config.flush()
        result = run_job(2, "stall.py", "warn", launcher_args=("--config-file", config.name))
    assert result.returncode == 2
    assert "line 2" in result.output and "stall_check.warning_time_seconds" in result.output
