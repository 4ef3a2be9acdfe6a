"""The deadlock watch: ranks blocked on collectives that the others never submit fail within the
peer timeout (run with a short KOLO_PEER_TIMEOUT and no stall shutdown), while a rank that is only
late (busy, not waiting on kolo) never trips it."""

import sys
import time

import torch

import horovod.torch as hvd


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    odd = size - 1
    timeout = float(sys.argv[1])

    # The odd rank took another branch: it waits on a collective nobody else calls, the others
    # wait on one it never calls. Every rank fails, naming the tensor and who did not submit it.
    name = "dl.other_branch" if rank == odd else "dl.main_branch"
    try:
        hvd.allreduce(torch.ones(3), name=name)
        raise AssertionError(f"rank {rank}: the deadlock did not fail")
    except hvd.HorovodInternalError as error:
        text = str(error)
        assert "Deadlock" in text and name in text, text
        missing = "rank 0" if rank == odd else f"rank {odd}"
        assert f"but not by {missing}" in text, text

    # A late rank (busy for twice the timeout, never waiting on kolo) is no deadlock.
    if rank == odd:
        time.sleep(2 * timeout)
    total = hvd.allreduce(torch.ones(3), op=hvd.Sum, name="dl.late")
    assert total.tolist() == [size] * 3, total

    print(f"rank {rank} OK")
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
