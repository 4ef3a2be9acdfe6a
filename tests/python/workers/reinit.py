"""init() after shutdown() in the same process works, and the job keeps its numbering."""

import numpy as np

import kolo


def main() -> None:
    results = []
    for round_ in range(3):
        assert not kolo.is_initialized()
        kolo.init()
        assert kolo.is_initialized()
        rank, size = kolo.rank(), kolo.size()
        total = kolo.allreduce(np.array([rank + round_], np.int64), op=kolo.Sum, name="sum")
        results.append(int(total[0]))
        kolo.shutdown()
    assert results == [sum(range(size)) + size * r for r in range(3)], results
    try:
        kolo.allreduce(np.ones(1, np.float32))
        raise AssertionError("allreduce after shutdown succeeded")
    except kolo.KoloError as error:
        assert "not initialized" in str(error), error
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
