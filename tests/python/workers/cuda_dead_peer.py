"""dead_peer.py on CUDA tensors (tests/python/test_gpu_faults.py, run on a lent GPU): one rank
is killed with SIGKILL (or frozen with SIGSTOP) after a first allreduce, and every survivor's
allreduces of CUDA tensors (16 MiB, through whichever path the job took: NCCL with a GPU per
rank, the asynchronous host path where ranks share a GPU) fail with HorovodInternalError naming
that rank within seconds, the later ones at once.

    cuda_dead_peer.py VICTIM [stop]

CUDA_DEAD_PEER_DEVICE=cpu runs the same on CPU tensors (a dry run of the worker without a GPU).
"""

import os
import signal
import sys

import torch

import horovod.torch as hvd
from kolo import _core
from kolo.torch import staging
# tests/python/workers/survivor.py
from survivor import expect_dead_peer, wait_for_survivors_warmup


def main() -> None:
    victim = int(sys.argv[1])
    freeze = len(sys.argv) > 2 and sys.argv[2] == "stop"
    hvd.init()
    rank = hvd.rank()
    kind = os.environ.get("CUDA_DEAD_PEER_DEVICE", "cuda")
    if kind == "cuda":
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    data = torch.ones(4 << 20, device=kind)
    total = hvd.allreduce(data, op=hvd.Sum, name="warmup")
    assert torch.equal(total, torch.full_like(data, hvd.size())), total
    path = staging.path_for(kind, _core.OP_ALLREDUCE)
    print(f"rank {rank} path {path}", flush=True)
    wait_for_survivors_warmup(rank, victim, hvd.size())
    if rank == victim:
        os.kill(os.getpid(), signal.SIGSTOP if freeze else signal.SIGKILL)
    error = expect_dead_peer(lambda step: hvd.allreduce(data, name=f"step.{step}"), victim, 1000,
                             rank)
    assert isinstance(error, hvd.HorovodInternalError), type(error)
    try:
        hvd.allreduce(torch.ones(2, device=kind), name="later")
        raise AssertionError("later op succeeded")
    except hvd.HorovodInternalError as later:
        assert f"rank {victim}" in str(later), later
    print(f"rank {rank} OK", flush=True)
    # No shutdown negotiation with a dead peer; a frozen one is ended by the launcher.
    os._exit(3 if freeze else 0)


if __name__ == "__main__":
    main()
