"""Soak: STEPS training steps at np 3 with tensor names that change every 100 steps (a new
"generation" of names) and uneven data: in each generation rank r runs 100 - 10 r steps, then
joins, so the other ranks' later steps reduce with a joined rank's zeros. Checks every result,
and prints, for the test to judge: resident memory after warm-up and at the end, open file
descriptors before init / during / after shutdown, and the response cache's size against its
capacity.

    soak_worker.py STEPS
"""

import os
import sys
import time

import numpy as np

import kolo
from job_tag import shm_prefix  # tests/faults/workers/job_tag.py

GENERATION = 100  # steps per set of names
TENSORS = 3


def rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def main() -> None:
    steps = int(sys.argv[1])
    print(f"SHM {shm_prefix()}")
    fds_before = fd_count()
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    arrays = [np.ones(n, np.float32) for n in (1, 100, 10_000)][:TENSORS]
    warmup_at = max(GENERATION, steps // 10)
    rss_warm = fds_warm = None
    largest_cache = 0
    start = time.monotonic()
    step = 0
    while step < steps:
        generation = step // GENERATION
        mine = GENERATION - 10 * rank  # uneven data: this rank's steps in this generation
        for i in range(GENERATION):
            if i < mine:
                for t, array in enumerate(arrays):
                    out = kolo.allreduce(array, op=kolo.Sum, name=f"gen{generation}.t{t}")
                    active = sum(1 for r in range(size) if i < GENERATION - 10 * r)
                    if not np.all(out == active):
                        raise AssertionError(f"rank {rank} step {step + i} tensor {t}: got "
                                             f"{out[:3]}, want {active}")
        kolo.join()
        step += GENERATION
        stats = kolo._core.stats()
        largest_cache = max(largest_cache, stats["cache_entries"])
        if stats["cache_entries"] > stats["cache_capacity"]:
            raise AssertionError(f"cache holds {stats['cache_entries']} entries, capacity "
                                 f"{stats['cache_capacity']}")
        if rss_warm is None and step >= warmup_at:
            rss_warm, fds_warm = rss_kib(), fd_count()
    rss_end, fds_end = rss_kib(), fd_count()
    stats = kolo._core.stats()
    wall = time.monotonic() - start
    kolo.shutdown()
    fds_after = fd_count()
    print(f"SOAK rank={rank} steps={step} wall_s={wall:.1f} rss_warm_kib={rss_warm} "
          f"rss_end_kib={rss_end} fds_before_init={fds_before} fds_warm={fds_warm} "
          f"fds_end={fds_end} fds_after_shutdown={fds_after} "
          f"cache_entries={stats['cache_entries']} cache_capacity={stats['cache_capacity']} "
          f"largest_cache={largest_cache} cache_hits={stats['cache_hits']}")
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
