"""Load (issue 13): 2,000 tiny tensors per step at np 3 complete with correct values on every
rank, over TCP and shared memory. Timing is bench/load's business (medians of step and
negotiation time); this test checks correctness and that every step finishes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fault_harness import kolorun

WORKER = Path(__file__).parent / "workers" / "load_worker.py"
STEPS = 5
TENSORS = 2000


@pytest.mark.parametrize("transport", ["tcp", "shm"])
def test_two_thousand_tensors_per_step_are_correct(transport):
    env = dict(os.environ, OMP_NUM_THREADS="1", KOLO_SHM_DISABLE="1" if transport == "tcp" else "0")
    proc = subprocess.run([kolorun(), "-np", "3", sys.executable, str(WORKER), str(STEPS),
                           str(TENSORS)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout
    for rank in range(3):
        assert f"[{rank}]<stdout>:rank {rank} OK" in proc.stdout, proc.stdout
        steps = [line for line in proc.stdout.splitlines()
                 if line.startswith(f"[{rank}]<stdout>:STEP ")]
        assert len(steps) == STEPS, proc.stdout
