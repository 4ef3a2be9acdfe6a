"""torch's thread count inside the rank's share of the cores (kolo's default placement).

A rank placed at init (under mpirun or srun that did not bind, core/rank_placement.h) started
with torch counting every CPU of the job: N ranks each running that many threads on their share
would fight over it. So the count becomes the share's, unless the user chose one: through
OMP_NUM_THREADS, or torch.set_num_threads() before init (any count other than the one torch
picked from the mask the process started with). Ranks kolorun placed start with OMP_NUM_THREADS
set by kolorun, and torch reads it itself.
"""

from __future__ import annotations

import os

import torch

from kolo import _core


def apply_share_thread_count() -> None:
    placement = _core.placement()
    threads = placement["threads"]
    if threads is None or "OMP_NUM_THREADS" in os.environ:
        return
    # torch's own default is the number of CPUs in the mask the process started with.
    if torch.get_num_threads() != len(placement["job_cpus"]):
        return  # the user's choice
    torch.set_num_threads(threads)
