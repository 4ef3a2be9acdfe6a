"""Ctrl-C during a blocking wait: rank 0 waits on operations the other ranks hold back, the test
sends it SIGINT, and the wait must end in KeyboardInterrupt at once (Horovod's waits ignore
signals until the operation ends). The operations keep running: once the others submit them,
synchronizing the same handles again gives the right results.

Files in the directory argv[1]: `pid` (rank 0's pid, for the test), `waiting.N` (rank 0 is in
its N-th wait), `go` (rank 0 let the others submit), `join` and `joined.R` (the same for join)."""

import os
import sys
import time
from pathlib import Path

import torch

import horovod.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
sync = Path(sys.argv[1])


def wait_for_file(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"rank {rank}: {path.name} never appeared"
        time.sleep(0.05)


def interrupted_wait(handle: int, wait_number: int) -> None:
    """synchronize(handle) must end in KeyboardInterrupt (the test's SIGINT): nothing else can
    end it, since the other ranks submit only after `go`."""
    try:
        (sync / f"waiting.{wait_number}").touch()
        hvd.synchronize(handle)
    except KeyboardInterrupt:
        assert not hvd.poll(handle), "the operation completed without the other ranks"
        print(f"rank {rank} wait {wait_number} interrupted")
        return
    raise AssertionError(f"wait {wait_number} ended without an interrupt")


def submit():
    reduced = hvd.allreduce_async(torch.full((4,), float(rank + 1)), name="held.sum", op=hvd.Sum)
    gathered = hvd.allgather_async(torch.full((2,), float(rank)), name="held.gather")
    return reduced, gathered


if rank == 0:
    (sync / "pid").write_text(str(os.getpid()))
    reduced, gathered = submit()
    interrupted_wait(reduced, 1)  # an in-place result: _core.finish
    interrupted_wait(gathered, 2)  # an output the core allocates: _core.wait
    (sync / "go").touch()
else:
    wait_for_file(sync / "go")
    reduced, gathered = submit()

total = hvd.synchronize(reduced)
expected = float(sum(range(1, size + 1)))
assert torch.equal(total, torch.full((4,), expected)), f"rank {rank}: allreduce gave {total}"
gather = hvd.synchronize(gathered)
expected_gather = torch.arange(size, dtype=torch.float32).repeat_interleave(2)
assert torch.equal(gather, expected_gather), f"rank {rank}: allgather gave {gather}"

# join: rank 0's wait is interrupted too; its join request stays with the runtime, so the others'
# joins complete with it.
if rank == 0:
    try:
        (sync / "waiting.3").touch()
        hvd.join()
        raise AssertionError("join ended without an interrupt")
    except KeyboardInterrupt:
        print(f"rank {rank} wait 3 interrupted")
    (sync / "join").touch()
    for other in range(1, size):
        wait_for_file(sync / f"joined.{other}")
else:
    wait_for_file(sync / "join")
    last = hvd.join()
    assert 0 <= last < size, last
    (sync / f"joined.{rank}").touch()
hvd.shutdown()
print(f"rank {rank} OK")
