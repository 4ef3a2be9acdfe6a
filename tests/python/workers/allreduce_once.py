"""One allreduce whose result every rank checks; enough to prove the mesh formed."""

import numpy as np

import kolo


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    got = kolo.allreduce(np.full(1000, rank + 1, np.float64), op=kolo.Sum, name="sum")
    want = size * (size + 1) / 2
    assert np.all(got == want), (rank, got[:4], want)
    print(f"rank {rank} of {size}: sum {want:g}", flush=True)
    print(f"rank {rank} OK", flush=True)
    kolo.shutdown()


if __name__ == "__main__":
    main()
