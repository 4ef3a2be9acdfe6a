"""np 3: rank 1 is killed while rank 0 waits on an op of process set {0, 1} and rank 2 on global
ops; both survivors fail within seconds with an error naming rank 1 (the set's ops are failed
like every other pending op)."""

import os
import signal
import sys
import time

import torch

import horovod.torch as hvd


def main() -> None:
    hvd.init(process_sets="dynamic")
    rank = hvd.rank()
    pair = hvd.add_process_set([0, 1])
    hvd.allreduce(torch.ones(8), name="warmup")
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        for step in range(1000):
            if rank == 0:
                hvd.allreduce(torch.ones(8), name=f"pair.{step}", process_set=pair)
            else:
                hvd.allreduce(torch.ones(8), name=f"global.{step}")
        raise AssertionError("collectives kept succeeding without rank 1")
    except hvd.HorovodInternalError as error:
        elapsed = time.monotonic() - start
        print(f"rank {rank} error after {elapsed:.2f}s: {error}")
        assert "rank 1" in str(error), error
        assert elapsed < 10, elapsed
    print(f"rank {rank} OK")
    sys.stdout.flush()
    os._exit(0)  # no shutdown negotiation with a dead peer


if __name__ == "__main__":
    main()
