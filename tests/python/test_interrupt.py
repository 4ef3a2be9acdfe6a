"""Ctrl-C (SIGINT) reaches a rank blocked in synchronize() or join(): KeyboardInterrupt, the handles
stay valid, and the operations finish correctly once the other ranks submit them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import JobResult, WORKERS, kolorun_path


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, _ = proc.communicate()
            pytest.fail(f"{path.name} never appeared:\n{out}")
        time.sleep(0.05)


@pytest.mark.parametrize("np_", [2, 3])
def test_ctrl_c_interrupts_a_blocking_wait_and_the_handle_survives(np_, tmp_path):
    cmd = [kolorun_path(), "-np", str(np_), sys.executable, str(WORKERS / "interrupt_wait.py"),
           str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for wait_number in (1, 2, 3):
            wait_for(tmp_path / f"waiting.{wait_number}", proc)
            time.sleep(1.0)  # well inside synchronize() by now
            os.kill(int((tmp_path / "pid").read_text()), signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    result = JobResult(proc.returncode, out)
    result.assert_ok(np_)
    for wait_number in (1, 2, 3):
        assert f"rank 0 wait {wait_number} interrupted" in result.lines_of(0), out
