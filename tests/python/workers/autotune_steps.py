"""Training-like steps (a few gradients allreduced per step) until autotune has fixed its choice;
every rank then prints the parameters in force."""

import numpy as np

import kolo

MAX_STEPS = 5000
SIZES = [1000, 20000, 200000, 5000]


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    for step in range(MAX_STEPS):
        grads = [np.full(n, rank + 1, dtype=np.float32) for n in SIZES]
        handles = [kolo.allreduce_async_(g, op=kolo.Sum, name=f"grad{i}")
                   for i, g in enumerate(grads)]
        # Ranks read their counters at slightly different moments: agree on when to stop.
        tuning = np.array([1 if kolo._core.stats()["autotuning"] else 0], dtype=np.int32)
        handles.append(kolo.allreduce_async_(tuning, op=kolo.Max, name="still_tuning"))
        for handle in handles:
            kolo.synchronize(handle)
        want = size * (size + 1) / 2
        assert all(np.all(g == want) for g in grads), step
        if tuning[0] == 0:
            break
    stats = kolo._core.stats()
    assert not stats["autotuning"], f"autotune still running after {MAX_STEPS} steps"
    print(f"rank {rank} steps {step + 1} tuned {stats['fusion_threshold']} "
          f"{stats['cycle_time_ms']:g} {int(stats['cache_enabled'])}")
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
