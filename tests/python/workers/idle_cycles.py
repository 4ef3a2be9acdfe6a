"""An idle runtime runs no negotiation cycles through the host arena (argv[1] == "arena"; over
the links, argv[1] == "links", it still runs one every cycle time, as Horovod's loop), yet a rank
with nothing to do joins the cycles its peers begin: the last rank stays out of a process set and
idles while the others run ops on it, which need every rank's global cycle. stop_timeline() on an
idle rank 0 does not wait for a cycle that would never come."""

import os
import sys
import time
from pathlib import Path

import torch

import horovod.torch as hvd
from kolo import _core


def idle_cycles(seconds: float) -> int:
    before = _core.stats()["cycles"]
    time.sleep(seconds)
    return _core.stats()["cycles"] - before


def main() -> None:
    transport, signal_dir = sys.argv[1], Path(sys.argv[2])
    size = int(os.environ["HOROVOD_SIZE"])
    members = hvd.ProcessSet(list(range(size - 1)))
    hvd.init(process_sets=[members])
    rank = hvd.rank()
    hvd.allreduce(torch.ones(1), name="warm")

    cycles = idle_cycles(0.5)
    print(f"IDLE_CYCLES {cycles}", flush=True)
    assert (cycles == 0) if transport == "arena" else (cycles > 0), cycles

    done = signal_dir / "members.done"
    if members.included():
        for i in range(50):
            out = hvd.allreduce(torch.full((4,), float(rank + 1)), op=hvd.Sum, name=f"set.{i}",
                                process_set=members)
            assert out.tolist() == [float(sum(range(1, size)))] * 4, out
        if rank == 0:
            done.touch()
    else:
        # Nothing submitted here until the members are done: this rank's background thread is
        # idle throughout, and the members' ops complete only if it joins their cycles.
        deadline = time.monotonic() + 60
        while not done.exists():
            assert time.monotonic() < deadline, "the members' process-set ops never finished"
            time.sleep(0.01)
    print(f"rank {rank} SET_OPS done", flush=True)
    hvd.barrier()

    if rank == 0:
        hvd.start_timeline(str(signal_dir / "timeline.json"))
    hvd.allreduce(torch.ones(8), name="timed")
    if rank == 0:
        time.sleep(0.2)  # idle again, and so are the others, which begin no cycle before 1.5 s
        start = time.monotonic()
        hvd.stop_timeline()
        took = time.monotonic() - start
        print(f"STOP_TIMELINE {took:.3f}", flush=True)
        # Without a wake-up it would sit out its 1 s wait for the next cycle.
        assert took < 0.8, took
    else:
        time.sleep(1.5)
    hvd.barrier()
    hvd.shutdown()
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main()
