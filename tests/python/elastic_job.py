"""A kolorun job running in the background whose merged output is read line by line, so an
elastic test can act when a line appears (change the discovery answer, kill a host) and then wait
for the end. Shared by tests/python/test_elastic_launcher.py and tests/multihost/test_elastic.py
(so it imports no conftest)."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

import pytest


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Job:
    def __init__(self, command: list[str], env: dict[str, str], timeout: float = 120):
        self.lines: list[str] = []
        self.cond = threading.Condition()
        # Ctrl-C's default action, as from a terminal, whatever this process inherited (a shell's
        # background job ignores SIGINT, and its workers would then never see KeyboardInterrupt).
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, preexec_fn=_default_sigint)
        self.deadline = time.monotonic() + timeout
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    @property
    def output(self) -> str:
        with self.cond:
            return "\n".join(self.lines)

    def wait_for_line(self, pattern: str) -> None:
        """Fails the test when kolorun ends or the job's time is up before such a line."""
        regex = re.compile(pattern)
        with self.cond:
            while not any(regex.search(line) for line in self.lines):
                left = self.deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    self.proc.kill()
                    pytest.fail(f"no line matching {pattern!r}:\n" + "\n".join(self.lines))
                self.cond.wait(min(left, 0.5))

    def finish(self) -> int:
        """kolorun's exit code; fails the test (killing kolorun) when it does not end in time."""
        try:
            code = self.proc.wait(timeout=max(1, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("kolorun did not finish in time (hang?):\n" + self.output)
        self.reader.join(10)
        return code
