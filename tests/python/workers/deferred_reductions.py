"""DistributedOptimizer leaves its gradients' allreduces to synchronize() when the rank may use one
core (kolo.common.grouping.synchronize_runs_reductions): synchronize()'s waits then run every
cycle on the caller's thread (stats' driven_cycles), and the averaged gradients are right. With
more than one core (argv[1] "overlapped", under --bind-to none) the background thread reduces
them during backward as before, and no cycle is driven. A handle queued for its caller to drive
that is polled instead of waited for still completes (the background thread takes it)."""

import copy
import os
import sys
import time

import torch

import horovod.torch as hvd
from kolo import _core
from kolo.common.grouping import synchronize_runs_reductions
from kolo.torch.allreduce_ops import _allreduce_async

STEPS = 8


def main() -> None:
    mode = sys.argv[1]
    if mode == "deferred":
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    assert synchronize_runs_reductions() == (mode == "deferred"), (mode, os.sched_getaffinity(0))

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 3))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    before = _core.stats()
    for step in range(STEPS):
        optimizer.zero_grad()
        inputs = torch.full((2, 4), float(rank + step))
        # This rank's own gradients, from a copy without hooks (the optimizer's may already be
        # averaging the model's own in place during backward).
        reference = copy.deepcopy(model)
        reference(inputs).sum().backward()
        local = [p.grad for p in reference.parameters()]
        model(inputs).sum().backward()
        optimizer.synchronize()
        # The average of every rank's gradient, from this rank's own and the others' (gathered).
        for i, (p, mine) in enumerate(zip(model.parameters(), local)):
            everyone = hvd.allgather(mine.unsqueeze(0), name=f"check.{step}.{i}")
            assert torch.allclose(p.grad, everyone.mean(0), atol=1e-6), (step, p.grad, everyone)
        with optimizer.skip_synchronize():
            optimizer.step()
    after = _core.stats()
    driven = after["driven_cycles"] - before["driven_cycles"]
    print(f"DRIVEN {driven} OF {after['cycles'] - before['cycles']}", flush=True)
    if mode == "deferred":
        # Most synchronize() calls ran their cycle on this thread (not every one: the background
        # thread, looking at the arena while idle, may join the peer's cycle first).
        assert driven >= STEPS // 2, driven
    else:
        assert driven == 0, driven

    # Queued for its caller to drive, then polled: done well within a few seconds.
    tensor = torch.full((3,), float(rank))
    handle = _allreduce_async(tensor, None, "polled", hvd.Sum, 1.0, 1.0, hvd.global_process_set,
                              True)
    deadline = time.monotonic() + 10
    while not hvd.poll(handle):
        assert time.monotonic() < deadline, "a polled caller-driven handle never completed"
        time.sleep(0.001)
    hvd.synchronize(handle)
    assert tensor.tolist() == [size * (size - 1) / 2] * 3, tensor
    print(f"rank {rank} OK", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
