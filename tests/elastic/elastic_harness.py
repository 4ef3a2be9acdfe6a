"""Running kolorun in elastic mode from a test: the job's output streamed line by line (so a test
can act when training reaches a point), its workers found and signalled, a discovery script
whose hosts the test edits, and a hard time limit on everything (no case may hang)."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
WORKERS = TESTS / "python" / "workers"
FAKE_SSH_DIR = TESTS / "python" / "fake_ssh"
# tests/python/conftest.py's kolorun_path(), loaded under another name (this folder has a
# conftest of its own).
_spec = importlib.util.spec_from_file_location("python_tests_conftest",
                                               TESTS / "python" / "conftest.py")
_python_conftest = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _python_conftest  # its dataclasses look their module up
_spec.loader.exec_module(_python_conftest)
kolorun_path = _python_conftest.kolorun_path

_LINE = re.compile(r"^\[(\d+)\]<(stdout|stderr)>:(.*)$")


def elastic_unsupported_reason() -> str | None:
    """Why kolorun cannot run elastic jobs here (None: it can)."""
    try:
        text = subprocess.run([kolorun_path(), "--help"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"kolorun --help failed: {error}"
    if "--host-discovery-script" not in text:
        return "this kolorun has no elastic mode (--host-discovery-script)"
    return None


class Discovery:
    """A host discovery script printing the lines of a file the test rewrites."""

    def __init__(self, folder: Path, hosts: list[str]):
        self.hosts_file = folder / "hosts.txt"
        self.script = folder / "discover.sh"
        self.script.write_text(f"#!/bin/sh\ncat {self.hosts_file}\n")
        self.script.chmod(0o755)
        self.set(hosts)

    def set(self, hosts: list[str]) -> None:
        # Written whole and renamed, so the launcher never reads half a list.
        tmp = self.hosts_file.with_suffix(".tmp")
        tmp.write_text("".join(h + "\n" for h in hosts))
        tmp.replace(self.hosts_file)


class ElasticJob:
    """A kolorun job in the background; `lines` fills as it prints."""

    def __init__(self, args: list[str], env: dict | None = None, cwd: Path | None = None,
                 limit: float = 240, fake_ssh: bool = True):
        full_env = dict(os.environ)
        if fake_ssh:  # 127.0.0.N are hosts of their own, reached through tests/python/fake_ssh
            full_env["PATH"] = f"{FAKE_SSH_DIR}:{full_env.get('PATH', '')}"
        full_env.setdefault("OMP_NUM_THREADS", "1")
        full_env.update(env or {})
        self.started = time.monotonic()
        self.deadline = self.started + limit
        self.lines: list[tuple[float, str]] = []
        self.proc = subprocess.Popen([kolorun_path(), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=full_env, cwd=cwd,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    @property
    def output(self) -> str:
        return "\n".join(line for _, line in list(self.lines))

    def wait_for(self, pattern: str, after: int = 0, timeout: float | None = None) -> int:
        """Index of the first line from `after` on matching `pattern` (a regex); fails the test
        (after killing the job) if none comes in time or the job ends first."""
        regex = re.compile(pattern)
        end = min(self.deadline, time.monotonic() + (timeout or 1e9))
        while time.monotonic() < end:
            snapshot = list(self.lines)
            for i in range(after, len(snapshot)):
                if regex.search(snapshot[i][1]):
                    return i
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"no line matching {pattern!r} (job "
                             f"{'ended' if self.proc.poll() is not None else 'still running'}):"
                             f"\n{self.output}")

    def time_of(self, index: int) -> float:
        return self.lines[index][0]

    def worker_pids(self, marker: str) -> dict[str, int]:
        """KOLO_WORKER_ID (or first-round KOLO_RANK) -> pid of this job's live workers, found as
        the processes whose command line contains `marker` (e.g. the script's unique path)."""
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if marker not in cmdline or "kolorun" in cmdline.split(" ")[0]:
                    continue
                environ = dict(item.split("=", 1) for item in (entry / "environ").read_bytes()
                               .decode(errors="replace").split("\0") if "=" in item)
            except (OSError, ValueError):
                continue
            if "python" not in cmdline.split(" ")[0]:
                continue
            key = environ.get("KOLO_WORKER_ID") or f"rank{environ.get('KOLO_RANK', '?')}"
            found[key] = int(entry.name)
        return found

    def signal_worker(self, marker: str, pick, sig: int) -> str:
        """Sends `sig` to the worker `pick(ids)` chooses among this job's workers.

        Returns the worker's id."""
        workers = self.worker_pids(marker)
        assert workers, f"no worker process found with {marker!r} in its command line"
        chosen = pick(sorted(workers))
        os.kill(workers[chosen], sig)
        return chosen

    def finish(self, timeout: float | None = None) -> int:
        """The job's exit status; kills it and fails the test if it runs past its limit."""
        remaining = self.deadline - time.monotonic() if timeout is None else timeout
        try:
            code = self.proc.wait(timeout=max(remaining, 1))
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"elastic job still running after its time limit (hang?):\n"
                                 f"{self.output}") from None
        self._reader.join(timeout=10)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)

    def rank_lines(self, rank: int, stream: str = "stdout") -> list[str]:
        out = []
        for _, line in list(self.lines):
            match = _LINE.match(line)
            if match and int(match.group(1)) == rank and match.group(2) == stream:
                out.append(match.group(3))
        return out
