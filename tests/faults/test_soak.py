"""Soak (issue 13): a long np 3 training loop with changing tensor names and joins keeps resident
memory flat, the response cache within its capacity, and leaves no file descriptor or
shared-memory object behind. CI runs KOLO_SOAK_STEPS (default 2,000) steps; the full 20,000 is
`KOLO_SOAK_STEPS=20000 python -m pytest -q -s tests/faults/test_soak.py`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fault_harness import kolorun

WORKER = Path(__file__).parent / "workers" / "soak_worker.py"
STEPS = int(os.environ.get("KOLO_SOAK_STEPS", "2000"))
# Small enough that even the CI run (20 generations of 3 names) overflows it several times.
CACHE_CAPACITY = 16


@pytest.mark.parametrize("transport", ["tcp", "shm"])
def test_soak_holds_memory_cache_and_descriptors(transport):
    env = dict(os.environ, KOLO_CACHE_CAPACITY=str(CACHE_CAPACITY), OMP_NUM_THREADS="1",
               KOLO_SHM_DISABLE="1" if transport == "tcp" else "0")
    proc = subprocess.run([kolorun(), "-np", "3", sys.executable, str(WORKER), str(STEPS)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=60 + STEPS * 0.2)
    assert proc.returncode == 0, proc.stdout
    reports = [dict(pair.split("=") for pair in line.split("SOAK ")[1].split())
               for line in proc.stdout.splitlines() if "SOAK " in line]
    assert len(reports) == 3, proc.stdout
    for report in reports:
        print(f"soak {transport}: " + " ".join(f"{k}={v}" for k, v in report.items()))
        warm, end = int(report["rss_warm_kib"]), int(report["rss_end_kib"])
        assert end <= warm * 1.05, f"rank {report['rank']}: RSS grew from {warm} to {end} KiB"
        assert int(report["largest_cache"]) <= CACHE_CAPACITY, report
        assert int(report["fds_end"]) == int(report["fds_warm"]), report
        assert int(report["fds_after_shutdown"]) <= int(report["fds_before_init"]), report
    prefix = next(line.split()[1] for line in proc.stdout.splitlines() if "<stdout>:SHM " in line)
    left = [name for name in os.listdir("/dev/shm") if name.startswith(prefix)]
    assert not left, f"shared-memory objects left in /dev/shm: {left}"
