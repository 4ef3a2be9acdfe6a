#!/usr/bin/env python3
"""Wait fences per sleep of an idle-ish kolo job: how many membarrier(2) calls its ranks make
for each poll(2)/ppoll(2) they sleep in (transport/wait_fence.h: one per sleep at most since
session 23; before, one per shared-memory link armed).

    python3 bench/perop/idle_fences.py --np 4
    python3 bench/perop/idle_fences.py --np 4 --peer old=/path/to/other/python

Each build (this Python's kolo, and every --peer NAME=PYTHON, whose kolorun is taken from beside
that interpreter) runs the same job under `strace -f`: `--ops` small kolo.allreduce calls with
`--pause-ms` between them, so that the runtime's background thread idles in
Communicator::wait_idle, which arms every link. Counted: the ranks' GLOBAL_EXPEDITED membarrier
calls (registrations and kolorun's own calls left out) and their poll/ppoll calls. A count of
system calls, not a timing: strace slows the job, so the number of sleeps differs between runs,
the fences per sleep do not. Needs strace (apt-get install strace).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """
import sys, time
import numpy as np
import kolo
kolo.init()
x = np.ones(2, dtype=np.float32)
for _ in range(int(sys.argv[1])):
    kolo.allreduce(x, name="x")
    time.sleep(float(sys.argv[2]) / 1000)
kolo.shutdown()
"""

POLL = re.compile(r"\bp?poll\(")


def count(trace: str) -> tuple[int, int]:
    """(fences, sleeps) of the ranks in an `strace -f` log; kolorun is its first pid."""
    lines = trace.splitlines()
    launcher = lines[0].split()[0] if lines else ""
    fences = sleeps = 0
    for line in lines:
        fields = line.split()
        if not fields or fields[0] == launcher or "resumed>" in line:
            continue
        if "membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED" in line:
            fences += 1
        elif POLL.search(line):
            sleeps += 1
    return fences, sleeps


def run(python: str, args: argparse.Namespace, job: Path, log: Path) -> tuple[int, int]:
    kolorun = Path(python).parent / "kolorun"
    command = ["strace", "-f", "-e", "trace=membarrier,poll,ppoll", "-o", str(log), str(kolorun),
               "-np", str(args.np), python, str(job), str(args.ops), str(args.pause_ms)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                           f"{done.stderr}")
    return count(log.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--ops", type=int, default=400)
    parser.add_argument("--pause-ms", type=float, default=0.3)
    parser.add_argument("--peer", action="append", default=[],
                        help="NAME=PYTHON: another build's interpreter (its kolo and kolorun)")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        sys.exit("idle_fences: needs strace (apt-get install strace)")
    builds = [("kolo", sys.executable)] + [tuple(p.split("=", 1)) for p in args.peer]
    print(f"# np {args.np}, {args.ops} allreduces of 8 B, {args.pause_ms} ms apart, under strace")
    print(f"# {'build':>8} {'fences':>8} {'sleeps':>8} {'fences/sleep':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.py"
        job.write_text(JOB)
        for name, python in builds:
            fences, sleeps = run(python, args, job, Path(tmp) / f"{name}.strace")
            print(f"  {name:>8} {fences:>8} {sleeps:>8} {fences / max(sleeps, 1):>13.2f}")


if __name__ == "__main__":
    main()
