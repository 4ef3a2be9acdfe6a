"""horovod.runner.launch.parse_args / _run_elastic and the driver constants Horovod's elastic
integration tests patch (test/integration/elastic_common.py runs them unchanged): the command
line goes to kolorun whole, the patched constants reach it, and a failed job raises Horovod's
RuntimeError."""

import io
import sys

import pytest

import horovod.runner.elastic.driver as driver
import kolo.launch_command as launch_command
from horovod.runner.common.util import config_parser
from horovod.runner.elastic import constants
from horovod.runner.gloo_run import _get_min_start_hosts
from horovod.runner.launch import _run_elastic, parse_args

LINE = ["horovodrun", "-np", "2", "--min-num-proc", "2", "--log-level", "DEBUG",
        "--host-discovery-script", "/tmp/d.sh", "--max-num-proc", "4", "--reset-limit", "1",
        "--blacklist-cooldown-range", "1", "2", "python", "train.py", "--reset-limit", "9"]


class FakeKolorun:
    """Stands in for subprocess.Popen: records the command and environment, prints `said` on
    stderr and exits with `code`."""

    def __init__(self, code, said):
        self.code, self.said, self.calls = code, said, []

    def __call__(self, command, stderr=None, text=None, errors=None, env=None):
        self.calls.append((command, env))
        self.stderr = io.StringIO(self.said)
        return self

    def wait(self):
        return self.code


def test_parse_args_keeps_the_line_and_reads_kolorun_s_reset_limit(monkeypatch):
    monkeypatch.setattr(sys, "argv", LINE)
    args = parse_args()
    assert args.argv == LINE[1:]
    assert args.reset_limit == 1  # kolorun's, not the training script's --reset-limit 9
    assert args.elastic_timeout is None
    assert config_parser.set_env_from_args({}, args) == {}
    assert _get_min_start_hosts(None) == 1


def test_patched_driver_constants_reach_kolorun(monkeypatch):
    fake = FakeKolorun(0, "")
    monkeypatch.setattr(launch_command.subprocess, "Popen", fake)
    monkeypatch.setattr(driver, "ELASTIC_TIMEOUT_SECS", 1)
    monkeypatch.setattr(driver, "DISCOVER_HOSTS_FREQUENCY_SECS", 0.01)
    monkeypatch.delenv("HOROVOD_ELASTIC_TIMEOUT", raising=False)
    _run_elastic(parse_args(LINE[1:]))
    command, env = fake.calls[0]
    assert command[1:3] == ["--elastic-timeout", "1.0"] and command[3:] == LINE[1:]
    assert env["HOROVOD_ELASTIC_DISCOVERY_INTERVAL"] == "0.01"
    # An --elastic-timeout on the line wins; HOROVOD_ELASTIC_TIMEOUT wins over the constant.
    _run_elastic(parse_args(["--elastic-timeout", "7", *LINE[1:]]))
    assert "1.0" not in fake.calls[1][0][:3]
    monkeypatch.setenv("HOROVOD_ELASTIC_TIMEOUT", "5")
    _run_elastic(parse_args(LINE[1:]))
    assert fake.calls[2][0][1:3] == ["--elastic-timeout", "5.0"]


def test_failures_raise_horovod_s_messages(monkeypatch):
    monkeypatch.setattr(launch_command.subprocess, "Popen", FakeKolorun(
        1, "[kolorun] elastic: 2 resets exceed --reset-limit 1; ending the job\n"))
    with pytest.raises(RuntimeError, match=constants.RESET_LIMIT_EXCEEDED_MESSAGE.format(1)):
        _run_elastic(parse_args(LINE[1:]))
    monkeypatch.setattr(launch_command.subprocess, "Popen", FakeKolorun(
        1, "[kolorun] elastic: rank 0 on host a lost (exited with code 1)\n"))
    with pytest.raises(RuntimeError, match="Horovod detected that one or more processes exited "
                                           "with non-zero status") as error:
        _run_elastic(parse_args(LINE[1:]))
    assert "rank 0 on host a lost" in str(error.value)


def test_a_real_failing_job_raises():
    # Its one worker fails: its host is blacklisted and no worker is left, so kolorun ends the
    # job at once instead of waiting --elastic-timeout (600 s) for one that cannot come.
    with pytest.raises(RuntimeError, match="exited with non-zero status"):
        _run_elastic(parse_args(["-np", "1", "--min-np", "1", "-H", "localhost:1",
                                 sys.executable, "-c", "raise SystemExit(3)"]))
