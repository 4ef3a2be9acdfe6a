"""Runs the ops the timeline test looks for: fused and lone allreduces, an allgather, a broadcast.
argv[1] == "runtime": the timeline is started and stopped with hvd.start_timeline/stop_timeline
(path in argv[2]); otherwise HOROVOD_TIMELINE set by the test names the file."""

import sys

import numpy as np

import horovod.torch as hvd
import kolo

MAX_ROUNDS = 200


def run_ops(rank: int, size: int) -> None:
    # Several allreduces in flight at once fuse whenever they are agreed in the same cycle;
    # repeat until that happened at least once (each round is checked).
    for step in range(MAX_ROUNDS):
        arrays = [np.full(1000 * (i + 1), rank + step, dtype=np.float32) for i in range(3)]
        handles = [kolo.allreduce_async_(a, op=kolo.Sum, name=f"fused.{i}")
                   for i, a in enumerate(arrays)]
        for handle in handles:
            kolo.synchronize(handle)
        want = sum(range(size)) + step * size
        assert all(np.all(a == want) for a in arrays), step
        # Ranks read their counters at slightly different moments: agree on when to stop.
        fused = np.array([kolo._core.stats()["fused_groups"]], dtype=np.int64)
        kolo.allreduce_(fused, op=kolo.Min, name="fused_check")
        if fused[0] > 0:
            break
    assert fused[0] > 0, "no allreduce was ever fused"
    lone = np.ones(10, dtype=np.float64)
    kolo.allreduce_(lone, op=kolo.Sum, name="lone")
    assert np.all(lone == size)
    gathered = kolo.allgather(np.full((rank + 1, 2), rank, dtype=np.int32), name="gathered")
    assert gathered.shape == (size * (size + 1) // 2, 2)
    value = np.full(4, rank, dtype=np.int64)
    kolo.broadcast_(value, root_rank=size - 1, name="bcast")
    assert np.all(value == size - 1)


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if sys.argv[1] == "runtime":
        # Collectives before start_timeline must not appear in the file.
        kolo.allreduce_(np.ones(3, dtype=np.float32), op=kolo.Sum, name="before_start")
        hvd.start_timeline(sys.argv[2], mark_cycles=True)
        run_ops(rank, size)
        hvd.stop_timeline()
        kolo.allreduce_(np.ones(3, dtype=np.float32), op=kolo.Sum, name="after_stop")
    else:
        run_ops(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
