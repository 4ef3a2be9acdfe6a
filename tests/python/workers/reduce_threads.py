"""Large allreduces (over the arena's 1 MiB steps and the ring's 1 MiB segments) with exact
expected results, then a report of kolo's reduce helper threads: how many there are and whether
each may use the same CPUs as the background thread that started them."""

import json
import os
import time

import numpy as np

import kolo


def threads_named(prefix: str) -> list[int]:
    found = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as comm:
            if comm.read().strip().startswith(prefix):
                found.append(int(tid))
    return found


def cpu_ticks(tid: int) -> int:
    """User plus system time of one thread of this process, in clock ticks."""
    with open(f"/proc/self/task/{tid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    count = 3 * 262144 + 17  # 3 MiB of float32 and more, an odd count
    values = np.arange(count, dtype=np.int64) % 1000 - 500
    for dtype in (np.float32, np.int32, np.float16):
        mine = ((values + rank) % 64).astype(dtype)
        want = sum(((values + r) % 64).astype(np.float64) for r in range(size))
        got = kolo.allreduce(mine, op=kolo.Sum, name=f"sum.{np.dtype(dtype).name}")
        assert np.array_equal(got.astype(np.float64), want), (rank, dtype, got[:4], want[:4])
    got = kolo.allreduce(np.full(count, 3.0 * (rank + 1), np.float32), op=kolo.Average, name="avg")
    assert np.all(got == 1.5 * (size + 1)), (rank, got[:4])
    background = threads_named("kolo-background")
    assert len(background) == 1, background
    helpers = threads_named("kolo-reduce")
    mask = os.sched_getaffinity(background[0])
    same_mask = [os.sched_getaffinity(tid) == mask for tid in helpers]
    # Idle helpers sleep: over half a second without work they use (almost) no CPU.
    before = sum(cpu_ticks(tid) for tid in helpers)
    time.sleep(0.5)
    idle_ticks = sum(cpu_ticks(tid) for tid in helpers) - before
    print("helpers: " + json.dumps({"count": len(helpers), "same_mask": same_mask,
                                    "idle_busy": idle_ticks > 5}), flush=True)
    print("background mask: " + json.dumps(sorted(mask)), flush=True)
    kolo.shutdown()
    print("after shutdown: " + json.dumps(len(threads_named("kolo-reduce"))), flush=True)
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main()
