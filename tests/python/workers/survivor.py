"""What a surviving rank checks when a peer dies: its collectives fail (no hang), within seconds,
with an error that names the dead rank. Shared by the dead-peer workers."""

import os
import time
from pathlib import Path

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


def wait_for_survivors_warmup(rank: int, victim: int, size: int) -> None:
    """Holds the victim back until every survivor has finished the warmup op.

    A rank that has finished an op may die while a peer is still finishing the same op, and kolo
    then fails that op on the peer too (a hang-up anywhere in the group ends every wait). The
    survivors' warmup must succeed in these tests, so with DEAD_PEER_SYNC_DIR set each survivor
    leaves a file there once its warmup is done, and the victim waits for all of them."""
    sync_dir = os.environ.get("DEAD_PEER_SYNC_DIR")
    if not sync_dir:
        return
    if rank != victim:
        (Path(sync_dir) / f"warm.{rank}").touch()
        return
    deadline = time.monotonic() + 30
    while not all((Path(sync_dir) / f"warm.{r}").exists() for r in range(size) if r != victim):
        assert time.monotonic() < deadline, "survivors never finished their warmup"
        time.sleep(0.01)
