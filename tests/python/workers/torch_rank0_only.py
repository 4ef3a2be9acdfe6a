"""A collective called on rank 0 only: the other ranks finish their script (and so shut down);
rank 0's op fails at once with an error naming the tensor and a rank, never a hang. argv[1]:
"late" makes rank 0 submit after the others have left, "early" before."""

import sys
import time

import torch

import horovod.torch as hvd


def main() -> None:
    hvd.init()
    rank = hvd.rank()
    hvd.allreduce(torch.ones(1), name="warmup")  # everyone is up
    if rank == 0:
        if sys.argv[1] == "late":
            time.sleep(1.0)
        start = time.monotonic()
        try:
            hvd.allreduce(torch.ones(3), name="only.on.rank0")
        except hvd.HorovodInternalError as error:
            text = str(error)
            assert "only.on.rank0" in text and "rank" in text and "shut down" in text, text
            # The ranks that left are named (before: by the coordinator's pending sweep; after:
            # by the agreed shutdown's announcers).
            assert any(f"rank {r} " in text or f"ranks {r}" in text
                       for r in range(1, hvd.size())), text
            print(f"rank 0 error: {text}")
        else:
            raise AssertionError("an allreduce on rank 0 alone completed")
        assert time.monotonic() - start < 20, "took too long to fail"
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
