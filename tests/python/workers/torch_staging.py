"""Every collective of horovod.torch through the host staging path (staging.py), forced for CPU
tensors with KOLO_STAGE_THROUGH_HOST=1 (the test sets it), or through the asynchronous host path
played on host memory with KOLO_STAGE_THROUGH_HOST=async: sync and async, in place and not,
grouped, with autograd. Each call must really be staged (to_host is counted), give the right
values, leave out-of-place inputs untouched and return new tensors, and write in-place results
into the caller's own tensor. A meta tensor is refused with a clear error.
"""

import os
import sys

import torch

import horovod.torch as hvd
from kolo.torch import staging

staged_calls = []
_to_host = staging.to_host


def counting_to_host(tensor):
    staged_calls.append(tuple(tensor.shape))
    return _to_host(tensor)


_to_host_async = staging.to_host_async


def counting_to_host_async(tensor, calls):
    staged_calls.append(tuple(tensor.shape))
    return _to_host_async(tensor, calls)


if os.environ.get("KOLO_STAGE_THROUGH_HOST") == "async":
    staging.to_host_async = counting_to_host_async
else:
    staging.to_host = counting_to_host


def staged(fn, expected_calls: int):
    """Runs fn() and checks it staged exactly `expected_calls` tensors."""
    before = len(staged_calls)
    result = fn()
    assert len(staged_calls) - before == expected_calls, (fn, len(staged_calls) - before)
    return result


def x_of(rank: int, rows: int = 6) -> torch.Tensor:
    return torch.arange(rows * 2, dtype=torch.float32).reshape(rows, 2) + 10 * rank


def check_allreduce(rank: int, size: int) -> None:
    total = sum(x_of(r) for r in range(size))
    x = x_of(rank)
    original = x.clone()
    out = staged(lambda: hvd.allreduce(x, op=hvd.Sum), 1)
    assert torch.equal(out, total) and torch.equal(x, original) and out.data_ptr() != x.data_ptr()
    h = staged(lambda: hvd.allreduce_async(x, op=hvd.Average), 1)
    assert torch.allclose(hvd.synchronize(h), total / size) and torch.equal(x, original)
    y = x_of(rank)
    assert staged(lambda: hvd.allreduce_(y, op=hvd.Sum), 1) is y and torch.equal(y, total)
    y = x_of(rank)
    h = staged(lambda: hvd.allreduce_async_(y, op=hvd.Sum, name="staged.inplace.async"), 1)
    while not hvd.poll(h):
        pass
    assert hvd.synchronize(h) is y and torch.equal(y, total)
    # Scale factors and integer dtypes go through unchanged.
    ints = torch.full((3,), rank + 1, dtype=torch.int32)
    assert torch.equal(staged(lambda: hvd.allreduce(ints, op=hvd.Sum, postscale_factor=2.0), 1),
                       torch.full((3,), size * (size + 1), dtype=torch.int32))
    # Autograd through a staged allreduce.
    leaf = x_of(rank).requires_grad_()
    hvd.allreduce(leaf, op=hvd.Sum).sum().backward()
    assert torch.equal(leaf.grad, torch.full_like(leaf, float(size)))


def check_grouped(rank: int, size: int) -> None:
    xs = [x_of(rank, rows) for rows in (1, 4, 7)]
    originals = [x.clone() for x in xs]
    totals = [sum(x_of(r, rows) for r in range(size)) for rows in (1, 4, 7)]
    outs = staged(lambda: hvd.grouped_allreduce(xs, op=hvd.Sum), 3)
    assert all(torch.equal(o, t) for o, t in zip(outs, totals))
    assert all(torch.equal(x, o) for x, o in zip(xs, originals))
    h = staged(lambda: hvd.grouped_allreduce_async(xs, op=hvd.Sum), 3)
    assert all(torch.equal(o, t) for o, t in zip(hvd.synchronize(h), totals))
    results = staged(lambda: hvd.grouped_allreduce_(xs, op=hvd.Sum), 3)
    assert all(r is x and torch.equal(x, t) for r, x, t in zip(results, xs, totals))
    ys = [x_of(rank, rows) for rows in (1, 4, 7)]
    h = staged(lambda: hvd.grouped_allreduce_async_(ys, op=hvd.Sum), 3)
    assert all(r is y and torch.equal(y, t) for r, y, t in zip(hvd.synchronize(h), ys, totals))
    gathered = staged(lambda: hvd.grouped_allgather([x_of(rank, rank + 1), x_of(rank, 2)]), 2)
    assert torch.equal(gathered[0], torch.cat([x_of(r, r + 1) for r in range(size)]))
    assert torch.equal(gathered[1], torch.cat([x_of(r, 2) for r in range(size)]))
    rs = staged(lambda: hvd.grouped_reducescatter([x_of(rank, 2 * size)] * 2, op=hvd.Sum), 2)
    want = sum(x_of(r, 2 * size) for r in range(size))[2 * rank:2 * rank + 2]
    assert all(torch.equal(r, want) for r in rs)


def check_gather_scatter_broadcast(rank: int, size: int) -> None:
    mine = x_of(rank, rank + 1)
    want = torch.cat([x_of(r, r + 1) for r in range(size)])
    assert torch.equal(staged(lambda: hvd.allgather(mine), 1), want)
    assert torch.equal(hvd.synchronize(staged(lambda: hvd.allgather_async(mine), 1)), want)
    rows = 2 * size
    total = sum(x_of(r, rows) for r in range(size))
    assert torch.equal(staged(lambda: hvd.reducescatter(x_of(rank, rows), op=hvd.Sum), 1),
                       total[2 * rank:2 * rank + 2])
    h = staged(lambda: hvd.reducescatter_async(x_of(rank, rows), op=hvd.Sum), 1)
    assert torch.equal(hvd.synchronize(h), total[2 * rank:2 * rank + 2])
    # alltoall with and without splits: (output, received_splits), both on the caller's device.
    send = torch.cat([torch.full((d + 1, 2), float(rank)) for d in range(size)])
    out, received = staged(lambda: hvd.alltoall(send, splits=[d + 1 for d in range(size)]), 1)
    assert torch.equal(out, torch.cat([torch.full((rank + 1, 2), float(r)) for r in range(size)]))
    assert received.tolist() == [rank + 1] * size and received.device == send.device
    even = staged(lambda: hvd.alltoall(torch.full((size, 1), float(rank))), 1)
    assert even.flatten().tolist() == [float(r) for r in range(size)]
    one_each = torch.full((size, 2), float(rank))
    out, received = hvd.synchronize(staged(lambda: hvd.alltoall_async(one_each, [1] * size), 1))
    assert out.flatten().tolist()[::2] == [float(r) for r in range(size)]
    # broadcast: new tensor, in place, async of both.
    b = x_of(rank)
    assert torch.equal(staged(lambda: hvd.broadcast(b, root_rank=size - 1), 1), x_of(size - 1))
    assert torch.equal(b, x_of(rank))
    assert staged(lambda: hvd.broadcast_(b, root_rank=0), 1) is b and torch.equal(b, x_of(0))
    c = x_of(rank)
    assert hvd.synchronize(staged(lambda: hvd.broadcast_async_(c, 0), 1)) is c
    assert torch.equal(c, x_of(0))
    assert torch.equal(hvd.synchronize(staged(lambda: hvd.broadcast_async(x_of(rank), 0), 1)),
                       x_of(0))
    # In-place broadcast into a parameter that requires grad (broadcast_parameters' case).
    p = torch.nn.Parameter(x_of(rank))
    hvd.broadcast_parameters([("p", p)], root_rank=0)
    assert torch.equal(p.detach(), x_of(0))


def check_optimizer(rank: int, size: int) -> None:
    torch.manual_seed(3)
    model = torch.nn.Linear(3, 1)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters())
    before = model.weight.detach().clone()
    model(torch.full((1, 3), float(rank + 1))).sum().backward()
    opt.step()
    mean_input = (size + 1) / 2
    assert torch.allclose(model.weight.detach(), before - mean_input)
    sparse = hvd.sparse_allreduce_async(torch.eye(3)[rank % 3].to_sparse(), "staged.sparse",
                                        hvd.Sum)()
    assert torch.equal(sparse.to_dense(), sum(torch.eye(3)[r % 3] for r in range(size)))


def check_meta_refused(rank: int, size: int) -> None:
    try:
        hvd.allreduce(torch.empty(4, device="meta"), name="on.meta")
    except ValueError as error:
        assert "on.meta" in str(error) and "meta device" in str(error), error
    else:
        raise AssertionError("a meta tensor was accepted")


def main() -> None:
    assert os.environ.get("KOLO_STAGE_THROUGH_HOST") in ("1", "async")
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check_allreduce(rank, size)
    check_grouped(rank, size)
    check_gather_scatter_broadcast(rank, size)
    check_optimizer(rank, size)
    check_meta_refused(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
