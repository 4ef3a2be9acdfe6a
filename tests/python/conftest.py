"""Shared helpers: run a worker script on N ranks with kolorun and read each rank's output."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from rank_output import rank_lines  # noqa: E402  (tests/support, shared with tests/faults)

WORKERS = Path(__file__).parent / "workers"


@dataclass
class JobResult:
    returncode: int
    output: str

    def lines_of(self, rank: int, stream: str = "stdout") -> list[str]:
        return rank_lines(self.output, rank, stream)

    def assert_ok(self, size: int) -> None:
        assert self.returncode == 0, f"job failed ({self.returncode}):\n{self.output}"
        for rank in range(size):
            assert f"rank {rank} OK" in self.lines_of(rank), (
                f"rank {rank} did not report OK:\n{self.output}")


def kolorun_path() -> str:
    # The kolorun built with the kolo package under test: $KOLORUN_PATH, else the one staged next
    # to it (dev_stage.sh), else PATH. PATH alone is not enough: pyenv's python shim puts the
    # interpreter's bin directory (with whatever kolorun pip installed there) first.
    if os.environ.get("KOLORUN_PATH"):
        return os.environ["KOLORUN_PATH"]
    spec = importlib.util.find_spec("kolo")
    if spec is not None and spec.origin is not None:
        staged = Path(spec.origin).parent.parent / "bin" / "kolorun"
        if staged.is_file():
            return str(staged)
    path = shutil.which("kolorun")
    if path is None:
        pytest.fail("kolorun is not on PATH: run scripts/setup.sh (pip install .) first")
    return path


def _keep_job_log(cmd: list[str], header: str, output: str | None) -> None:
    """With TEST_JOB_LOG_DIR set (scripts/device_check.sh on a lent GPU), each job's output
    also goes to a file there as soon as the job ends, named after the test: pytest prints a
    failure's report only at the end of the session, which a step's time limit may cut off
    (session 44 lost one so)."""
    folder = os.environ.get("TEST_JOB_LOG_DIR")
    if not folder:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "no-test").split(" ")[0]
    stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in test)[-150:]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{stem}.txt"), "a") as log:
        log.write(f"$ {' '.join(cmd)}\n{header}\n{output or ''}\n")


def run_command(cmd: list[str], env: dict | None = None, timeout: float = 120) -> JobResult:
    """Runs `cmd` with os.environ plus `env`, output and errors together; fails on timeout."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=full_env)
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        _keep_job_log(cmd, f"did not finish within {timeout} s", out)
        pytest.fail(f"{cmd[0]} did not finish within {timeout} s (hang?):\n{out}")
    _keep_job_log(cmd, f"exit status {proc.returncode}", proc.stdout)
    return JobResult(proc.returncode, proc.stdout)


def run_job(np: int, worker: str, *args: str, env: dict | None = None, timeout: float = 120,
            launcher_args: tuple[str, ...] = ()) -> JobResult:
    """Runs tests/python/workers/<worker> under `kolorun -np <np>`; fails the test on timeout."""
    cmd = [kolorun_path(), "-np", str(np), *launcher_args, sys.executable, str(WORKERS / worker),
           *args]
    return run_command(cmd, env, timeout)
