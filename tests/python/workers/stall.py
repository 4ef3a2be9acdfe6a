"""The stall inspector under kolorun: rank 1 holds back a tensor the others submitted.

argv[1] == "warn": rank 1 submits it late (after 4 s); with a 1 s check time rank 0 warns.
argv[1] == "shutdown": rank 1 submits a different tensor instead; with a 3 s shutdown time both
tensors are cancelled on every rank that submitted them, each error naming its tensor and the
missing ranks, and the job carries on.
The first round of each tensor completes normally, so the stalled round is a response-cache hit
on the ranks that submit it (their requests must still reach the stall inspector)."""

import sys
import time

import numpy as np

import kolo

HOLDOUT = 1


def roundtrip(name: str, size: int) -> None:
    array = np.ones(8, dtype=np.float32)
    kolo.allreduce_(array, op=kolo.Sum, name=name)
    assert np.all(array == size), (name, array)


def main() -> None:
    mode = sys.argv[1]
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    roundtrip("stalled", size)  # cached from now on
    roundtrip("other", size)

    if mode == "warn":
        if rank == HOLDOUT:
            time.sleep(4)
        roundtrip("stalled", size)
    else:
        name = "other" if rank == HOLDOUT else "stalled"
        handle = kolo.allreduce_async_(np.ones(8, dtype=np.float32), op=kolo.Sum, name=name)
        try:
            kolo.synchronize(handle)
        except Exception as error:  # noqa: BLE001 - the message is what is checked
            message = str(error)
        else:
            raise AssertionError(f"rank {rank}: tensor '{name}' completed despite the stall")
        print(f"rank {rank} error: {message!r}")
        assert f"'{name}'" in message, message
        assert "Missing ranks:" in message, message
        if rank == HOLDOUT:
            others = [r for r in range(size) if r != HOLDOUT]
            for r in others:
                assert f"\n{r}: [other]" in message, message
        else:
            assert f"\n{HOLDOUT}: [stalled]" in message, message
    roundtrip("after", size)  # the job goes on
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
