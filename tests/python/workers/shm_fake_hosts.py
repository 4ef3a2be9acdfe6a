"""Ranks pretend to live on two hosts (KOLO_HOSTNAME = host of rank // 2, each its own machine
id): shared memory inside a fake host, TCP across, and allreduce (hierarchical unless argv[1]
says "flat") stays exact. argv[1] "named": the launcher's hosts as given (names of this one
machine): the local numbers follow the names, and the allreduce stays exact."""

import os
import sys

import numpy as np

NAMED = len(sys.argv) > 1 and sys.argv[1] == "named"
rank_from_launcher = int(os.environ["KOLO_RANK"])
if not NAMED:
    os.environ["KOLO_HOSTNAME"] = f"fakehost{rank_from_launcher // 2}"
    # A machine id per pretended host: else kolo sees one machine and shares memory across.
    os.environ["KOLO_MACHINE_ID"] = f"fakemachine{rank_from_launcher // 2}"
if len(sys.argv) > 1 and sys.argv[1] == "flat":
    os.environ["HOROVOD_HIERARCHICAL_ALLREDUCE"] = "0"

import kolo  # noqa: E402


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    if NAMED:
        assert kolo.local_size() == int(os.environ["KOLO_LOCAL_SIZE"]), kolo.local_size()
    else:
        assert kolo.local_size() == (2 if rank // 2 < (size - 1) // 2 or size % 2 == 0 else 1), (
            rank, kolo.local_size())
        assert kolo.cross_size() == (size + 1) // 2 or kolo.local_rank() == 1
    for count in [0, 1, 5, 1001, 1 << 20]:
        for dtype in [np.float32, np.int64]:
            data = ((np.arange(count) * 7 + rank) % 5).astype(dtype)
            inputs = [((np.arange(count) * 7 + r) % 5).astype(np.float64) for r in range(size)]
            want = sum(inputs)
            got = kolo.allreduce(data, op=kolo.Sum, name=f"sum.{count}.{dtype.__name__}")
            assert np.array_equal(got.astype(np.float64), want), (count, dtype, got[:5])
            got = kolo.allreduce(data, op=kolo.Max, name=f"max.{count}.{dtype.__name__}")
            assert np.array_equal(got.astype(np.float64), np.max(np.stack(inputs), axis=0)), count
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
