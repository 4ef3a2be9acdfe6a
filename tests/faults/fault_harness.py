"""The fault matrix's harness: start a job under kolorun, inject a fault, measure from the moment
of the fault how long each surviving rank took to get an error and how long kolorun took to exit;
conftest.py prints every case's times as one table at the end of the session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rank_output import rank_lines  # tests/support (conftest.py puts it on sys.path)

WORKER = Path(__file__).parent / "workers" / "fault_worker.py"
PEER_TIMEOUT = 3.0  # KOLO_PEER_TIMEOUT and KOLO_START_TIMEOUT of every case
GRACE = 2.0  # kolorun --failure-grace-seconds of every case
DETECTION_SLACK = 2.0  # the bound: survivors detect within the timeout + 2 s


def kolorun() -> str:
    path = os.environ.get("KOLORUN_PATH") or shutil.which("kolorun")
    if not path:
        pytest.fail("kolorun is not on PATH (scripts/setup.sh installs it)")
    return path


@dataclass
class Measured:
    case: str
    detections: dict[int, float] = field(default_factory=dict)  # survivor rank -> s after fault
    exit_after: float | None = None  # kolorun's exit, s after the fault
    returncode: int | None = None


TABLE: list[Measured] = []


@dataclass
class Job:
    output: str
    returncode: int
    fault_at: float | None  # CLOCK_MONOTONIC of the injection (the victim's line, or the test's)
    exited_at: float

    def lines(self, rank: int, stream: str = "stdout") -> list[str]:
        return rank_lines(self.output, rank, stream)

    def shm_leftovers(self) -> list[str]:
        """This job's objects still in /dev/shm (the workers print their job's name prefix)."""
        prefix = next((line.split()[1] for rank in range(3) for line in self.lines(rank)
                       if line.startswith("SHM ")), None)
        assert prefix, f"no rank printed its shared-memory prefix:\n{self.output}"
        return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefix))

    def fault_time(self, victim: int) -> float:
        for line in self.lines(victim):
            if line.startswith("FAULT "):
                return float(line.split()[1])
        assert self.fault_at is not None, f"rank {victim} never injected its fault:\n{self.output}"
        return self.fault_at

    def detection(self, rank: int) -> tuple[float, str]:
        for line in self.lines(rank):
            if line.startswith("DETECTED "):
                _, when, message = line.split(" ", 2)
                return float(when), message
        raise AssertionError(f"rank {rank} reported no error:\n{self.output}")


def run_job(args: list[str], env: dict[str, str], timeout: float = 90,
            fault_after_ready=None, np_: int = 3) -> Job:
    """Runs kolorun with `args`; with `fault_after_ready`, calls it (with the Popen and the
    Job so far, whose lines name each rank's pid) once every rank printed READY, and takes that
    moment as the fault's."""
    full_env = dict(os.environ)
    full_env.update({"KOLO_PEER_TIMEOUT": str(PEER_TIMEOUT),
                     "KOLO_START_TIMEOUT": str(PEER_TIMEOUT), "OMP_NUM_THREADS": "1"})
    full_env.update(env)
    cmd = [kolorun(), "--failure-grace-seconds", str(GRACE), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=full_env)
    lines: list[str] = []
    fault_at = None
    deadline = time.monotonic() + timeout
    try:
        for line in proc.stdout:
            lines.append(line)
            if fault_after_ready and fault_at is None and \
                    sum("READY" in seen for seen in lines) == np_:
                fault_at = time.monotonic()
                fault_after_ready(proc, Job("".join(lines), 0, fault_at, 0.0))
            if time.monotonic() > deadline:
                break
        proc.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    exited_at = time.monotonic()
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        pytest.fail(f"kolorun did not finish within {timeout} s (hang?):\n{''.join(lines)}")
    return Job("".join(lines), proc.returncode, fault_at, exited_at)


def pids_alive(pids: list[int]) -> list[int]:
    """The pids that still name a live (not zombie) process."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] != "Z":
                    alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def print_table(write) -> None:
    if not TABLE:
        return
    write("")
    write(f"fault matrix (np 3, peer/start timeout {PEER_TIMEOUT:g} s, failure grace {GRACE:g} s; "
          "seconds after the fault)")
    write(f"{'case':<44} {'detection per survivor':<34} {'kolorun exit':>12}")
    for row in TABLE:
        detections = ", ".join(f"rank {r}: {t:.2f}" for r, t in sorted(row.detections.items()))
        exit_text = "-" if row.exit_after is None else f"{row.exit_after:.2f}"
        write(f"{row.case:<44} {detections or '-':<34} {exit_text:>12}")


def record(row: Measured) -> None:
    TABLE.append(row)
    sys.stdout.flush()


def within_bound(value: float, bound: float, context) -> None:
    """The product's time bounds, asserted when the matrix is run by hand (the default). CI's
    shared 2-core machine sometimes stalls a process for a second or more, so scripts/test.sh sets
    KOLO_FAULT_BOUNDS=report: an overrun is then printed (the table shows every time) but does not
    fail the run; whether each survivor named the culprit and kolorun failed is still asserted."""
    if value <= bound:
        return
    if os.environ.get("KOLO_FAULT_BOUNDS", "strict") == "report":
        print(f"\nOVER BOUND: {value:.2f} s > {bound:.2f} s in {context!r:.300}")
        return
    raise AssertionError((value, bound, context))
