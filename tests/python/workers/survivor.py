"""What a surviving rank checks when a peer dies: its collectives fail (no hang), within seconds,
with an error that names the dead rank. Shared by the dead-peer workers."""

import time

import kolo


def expect_dead_peer(run_step, victim: int, steps: int, rank: int) -> kolo.KoloError:
    """Calls run_step(step) until it raises; returns the error after checking it."""
    start = time.monotonic()
    try:
        for step in range(steps):
            run_step(step)
    except kolo.KoloError as error:
        elapsed = time.monotonic() - start
        print(f"rank {rank} error after {elapsed:.2f}s: {error}")
        assert f"rank {victim}" in str(error), error
        assert elapsed < 10, elapsed
        return error
    raise AssertionError(f"collectives kept succeeding without rank {victim}")
