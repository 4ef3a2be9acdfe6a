"""Runs kolo-bench (one collective; for allreduce, one algorithm forced with -a) and reads its
table: the timings the scaling model is fitted to and checked against."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


def kolorun_path() -> str:
    found = shutil.which("kolorun")
    if not found:
        raise SystemExit("scaling: kolorun is not on PATH (bash scripts/setup.sh installs it)")
    return found


def kolo_bench_path() -> str:
    beside = Path(kolorun_path()).parent / "kolo-bench"
    if beside.is_file():
        return str(beside)
    found = shutil.which("kolo-bench")
    if not found:
        raise SystemExit("scaling: kolo-bench is not installed beside kolorun nor on PATH")
    return found


def parse_table(output: str) -> dict[int, float]:
    """kolo-bench's rows: bytes -> seconds (the slowest rank's mean per iteration)."""
    rows: dict[int, float] = {}
    for line in output.splitlines():
        if line.startswith("[0]<stdout>:"):  # kolorun's prefix on rank 0's output
            line = line[len("[0]<stdout>:"):]
        words = line.split()
        if line.startswith("#") or len(words) != 8 or not words[0].isdigit():
            continue
        rows[int(words[0])] = float(words[4]) * 1e-6
    return rows


@dataclass
class Case:
    """One kolo-bench configuration: np, collective and algorithm, where the ranks run and how
    they talk."""

    transport: str  # "tcp" (loopback, shared memory off), "shm" or "veth" (namespaces)
    np: int
    algorithm: str  # kolo-bench -a (allreduce), -g (allgather); other collectives: "auto"
    hostlist: str = ""  # kolorun -H, for the namespaces
    hosts: int = 1
    collective: str = "allreduce"  # kolo-bench -t
    runs: list[dict[int, float]] = field(default_factory=list)

    def label(self) -> str:
        where = f" -H {self.hostlist}" if self.hostlist else ""
        what = self.algorithm if self.collective == "allreduce" else self.collective
        return f"{self.transport} np {self.np} {what}{where}"

    def best(self) -> dict[int, float]:
        """Per size, the fastest run: the one least disturbed by the machine's other work."""
        sizes = sorted(set().union(*self.runs)) if self.runs else []
        return {n: min(r[n] for r in self.runs if n in r) for n in sizes}

    def medians(self) -> dict[int, float]:
        sizes = sorted(set().union(*self.runs)) if self.runs else []
        return {n: statistics.median(r[n] for r in self.runs if n in r) for n in sizes}


@dataclass
class Sweep:
    min_bytes: str = "8"
    max_bytes: str = "64M"
    factor: int = 4
    iterations: int = 10
    warmup: int = 2


def run_case(case: Case, sweep: Sweep, env: dict[str, str], timeout: float = 300) -> None:
    """One kolo-bench run of `case`; appends its table to case.runs. A failure stops the bench
    with kolorun's output (a wrong result is a failure: -c 1)."""
    command = [kolorun_path(), "-np", str(case.np)]
    if case.hostlist:
        command += ["-H", case.hostlist, "-x", "OMP_NUM_THREADS"]
    command += [kolo_bench_path(), "-t", case.collective]
    if case.collective == "allreduce":
        command += ["-a", case.algorithm]
    elif case.collective == "allgather" and case.algorithm != "auto":
        command += ["-g", case.algorithm]
    command += ["-b", sweep.min_bytes, "-e", sweep.max_bytes, "-f", str(sweep.factor),
                "-n", str(sweep.iterations), "-w", str(sweep.warmup), "-c", "1"]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, timeout=timeout, check=False)
    if result.returncode != 0 or "Out of bounds values : 0 OK" not in result.stdout:
        raise SystemExit(f"scaling: {' '.join(command)} failed ({result.returncode}):\n"
                         f"{result.stdout}")
    case.runs.append(parse_table(result.stdout))
