"""Behaviours Horovod's own test_torch.py pins down, checked with kolo's own expectations: scale
factors on integer and float16 tensors (Horovod's CPU arithmetic, bit for bit), Average as a
division by the size, reducescatter gradients, sparse allreduce (direct and through
DistributedOptimizer), broadcast_optimizer_state with a parameter that has no gradient, and the
object helpers on a process set.

With KOLO_STAGE_THROUGH_HOST=1 (the test runs it both ways) every call also crosses staging.py.
"""

import os
import sys

import torch

import horovod.torch as hvd

os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"  # as Horovod's test file: sets added at run time

FACTOR = 0.3736  # not exact in float: float16 must scale with the factor rounded to float


def horovod_scaled(x: torch.Tensor, factor: float) -> torch.Tensor:
    """x * factor as Horovod's CPU kernel computes it: integers in float64 then truncated toward
    zero, float16 and float32 in float32 with the factor rounded to float32, float64 in float64."""
    if x.dtype in (torch.int32, torch.int64):
        return (x.double() * factor).to(x.dtype)
    if x.dtype in (torch.float16, torch.float32):
        return (x.float() * torch.tensor(factor, dtype=torch.float32)).to(x.dtype)
    return x * factor


def data(rank: int, shape, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(17 + rank)
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def check_scale_factors(rank: int, size: int) -> None:
    # Every rank sends the same tensor, as Horovod's tests do, so that sums of 16-bit values are
    # exact whatever order the ranks add in.
    rows = 2 * size
    for dtype in (torch.int32, torch.int64, torch.float16, torch.float32, torch.float64):
        inputs = [data(0, (rows, 3), dtype)] * size
        pre = sum(horovod_scaled(x, FACTOR).double() for x in inputs).to(dtype)
        post = horovod_scaled(sum(x.double() for x in inputs).to(dtype), FACTOR)
        mine = slice(2 * rank, 2 * rank + 2)
        got = {
            "allreduce.pre": hvd.allreduce(inputs[rank], op=hvd.Sum, prescale_factor=FACTOR),
            "allreduce.post": hvd.allreduce(inputs[rank], op=hvd.Sum, postscale_factor=FACTOR),
            "grouped.pre": hvd.grouped_allreduce([inputs[rank]] * 2, op=hvd.Sum,
                                                 prescale_factor=FACTOR)[1],
            "grouped.post": hvd.grouped_allreduce([inputs[rank]] * 2, op=hvd.Sum,
                                                  postscale_factor=FACTOR)[0],
            "rs.pre": hvd.reducescatter(inputs[rank], op=hvd.Sum, prescale_factor=FACTOR),
            "rs.post": hvd.reducescatter(inputs[rank], op=hvd.Sum, postscale_factor=FACTOR),
            "grs.pre": hvd.grouped_reducescatter([inputs[rank]] * 2, op=hvd.Sum,
                                                 prescale_factor=FACTOR)[0],
            "grs.post": hvd.grouped_reducescatter([inputs[rank]] * 2, op=hvd.Sum,
                                                  postscale_factor=FACTOR)[1],
        }
        for key, value in got.items():
            whole = pre if key.endswith("pre") else post
            want = whole if key.startswith(("allreduce", "grouped")) else whole[mine]
            assert value.dtype == dtype, (key, value.dtype)
            assert torch.equal(value, want), (key, dtype, value, want)
    # An integer average is exact even where 1 / size is not (sum * (1 / 3) can fall short).
    ints = torch.full((5,), 3 * (rank + 1), dtype=torch.int64)
    assert torch.equal(hvd.allreduce(ints, op=hvd.Average),
                       torch.full((5,), 3 * (size + 1) // 2, dtype=torch.int64))


def check_average_divides(rank: int, size: int) -> None:
    # Average is the sum divided by the size, rounded once in the tensor's type (float16 and
    # bfloat16 in float32), integers truncated: what Horovod's test_horovod_join_allreduce expects
    # of `sum / size`. Horovod's CPU code multiplies by a rounded 1 / size, an ulp off for a third
    # of these values at 3 ranks. Rank 0 contributes zeros, as a joined rank does.
    t = torch.arange(-99, 99)  # 198 values: whole rows for reducescatter on 2 and 3 ranks
    rows = slice(rank * (198 // size), (rank + 1) * (198 // size))
    for dtype in (torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
                  torch.float64):
        values = t.to(dtype)
        total = (t * (size - 1)).to(dtype)  # exact in every type here
        want = total / size if dtype.is_floating_point else total.div(size, rounding_mode="trunc")
        mine = torch.zeros_like(values) if rank == 0 else values
        got = hvd.allreduce(mine, op=hvd.Average, name=f"average.{dtype}")
        assert got.dtype == dtype and torch.equal(got, want), (dtype, got, want)
        got = hvd.grouped_allreduce([mine, mine], op=hvd.Average, name=f"g.average.{dtype}")
        assert all(torch.equal(g, want) for g in got), (dtype, got, want)
        got = hvd.reducescatter(mine, op=hvd.Average, name=f"rs.average.{dtype}")
        assert torch.equal(got, want[rows]), (dtype, got, want[rows])
    # The same through join, as Horovod's test: the joined rank's zeros, divided by the job size.
    values = t.to(torch.float32)
    if rank == 0:
        hvd.join()
    else:
        got = hvd.allreduce(values, op=hvd.Average, name="average.joined")
        hvd.join()
        assert torch.equal(got, values * (size - 1) / size), got


def check_reducescatter_gradients(rank: int, size: int) -> None:
    # Horovod: the allgathered output gradient, times the set size for Sum, as is for Average,
    # times both scale factors.
    rows = 3 * size
    for dtype in (torch.float32, torch.float64, torch.float16):
        for op, factor in ((hvd.Sum, size), (hvd.Average, 1)):
            x = torch.ones(rows, 2, dtype=dtype, requires_grad=True)
            hvd.reducescatter(x, op=op).backward(torch.full((3, 2), rank + 1.0, dtype=dtype))
            owner = torch.arange(rows).div(3, rounding_mode="floor").unsqueeze(1) + 1.0
            assert torch.equal(x.grad.double(), (owner * factor).expand(rows, 2)), (op, x.grad)
        xs = [torch.ones(rows, dtype=dtype, requires_grad=True) for _ in range(2)]
        outs = hvd.grouped_reducescatter(xs, op=hvd.Sum, prescale_factor=0.5,
                                         postscale_factor=3.0)
        sum(o.sum() for o in outs).backward()
        for x in xs:
            assert torch.equal(x.grad.double(), torch.full((rows,), 1.5 * size)), x.grad


def random_sparse(rank: int, rows: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 + rank + rows)
    t = torch.rand(rows, 4, generator=g)
    t[t < 0.7] = 0
    return t.to_sparse()


def check_sparse(rank: int, size: int) -> None:
    for rows in (1, 9, 40):
        for op in (hvd.Sum, hvd.Average):
            mine = random_sparse(rank, rows)
            want = sum(random_sparse(r, rows).to_dense() for r in range(size))
            want = want / size if op == hvd.Average else want
            got = hvd.sparse_allreduce_async(mine, name=f"sparse.{rows}.{op}", op=op)()
            assert got.is_sparse and got.shape == mine.shape
            assert torch.allclose(got.to_dense(), want, atol=1e-6), (rows, op)
    # Nothing on any rank: an empty sparse result of the right shape.
    empty = torch.zeros(6, 2).to_sparse()
    assert hvd.sparse_allreduce_async(empty, "sparse.empty", hvd.Sum)().to_dense().abs().sum() == 0
    try:
        hvd.sparse_allreduce_async(torch.ones(3).to_sparse(), "sparse.max", hvd.Max)
    except ValueError as error:
        assert "Average or op=Sum" in str(error)
    else:
        raise AssertionError("sparse allreduce with Max did not raise")


def check_sparse_optimizer(rank: int, size: int) -> None:
    """SparseAdam on nn.Embedding(sparse=True): the step uses the averaged sparse gradient, both
    with the allgather path and with sparse_as_dense, and the embeddings stay equal on every
    rank; rows no rank looked up are untouched."""
    for sparse_as_dense in (False, True):
        torch.manual_seed(5)
        model = torch.nn.Embedding(10, 3, sparse=True)
        before = model.weight.detach().clone()
        opt = hvd.DistributedOptimizer(torch.optim.SparseAdam(list(model.parameters()), lr=0.1),
                                       named_parameters=model.named_parameters(),
                                       sparse_as_dense=sparse_as_dense)
        lookups = [torch.tensor([[1, 2, 4], [4, 3, 2]]), torch.tensor([[1, 3], [7, 9]]),
                   torch.tensor([[0, 4]])]
        ids = lookups[rank % len(lookups)]
        (model(ids) * (rank + 1)).sum().backward()
        opt.step()
        weight = model.weight.detach()
        gathered = hvd.allgather(weight.unsqueeze(0))
        assert all(torch.equal(gathered[0], g) for g in gathered), sparse_as_dense
        touched = set().union(*[set(lookups[r % len(lookups)].flatten().tolist())
                                for r in range(size)])
        for row in range(10):
            assert torch.equal(weight[row], before[row]) == (row not in touched), (row, weight)


def check_broadcast_state_without_grad(rank: int, size: int) -> None:
    class Indexed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.index = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32),
                                            requires_grad=False)
            self.weight = torch.nn.Parameter(torch.rand(4))

        def forward(self, x):
            return torch.index_select(self.weight, 0, self.index.long()) * x

    model = Indexed()
    opt = torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=1e-6, momentum=0.9,
                          nesterov=True)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0, model=model)
    assert model.index.grad is None  # no gradient for a frozen parameter
    assert torch.equal(model.weight.grad, torch.zeros(4))
    assert torch.equal(hvd.broadcast(model.weight.grad, root_rank=0), model.weight.grad)
    assert torch.equal(hvd.broadcast(model.weight.detach(), 0), model.weight.detach())
    # Only root_rank has state (it loaded a checkpoint): the others create theirs with a purely
    # local step (a DistributedOptimizer's own step would wait for root_rank), then receive it.
    model = torch.nn.Linear(3, 2)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    if rank == 0:
        plain = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for p in model.parameters():
            p.grad = torch.full_like(p, 2.0)
        plain.step()
        opt.load_state_dict(plain.state_dict())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for p in model.parameters():
        assert torch.equal(opt.state[p]["momentum_buffer"], torch.full_like(p, 2.0)), opt.state[p]
    # model= marks sparse embeddings: SGD then warms up with a sparse zero gradient.
    embedding = torch.nn.Embedding(5, 2, sparse=True)
    sgd = torch.optim.SGD(embedding.parameters(), lr=0.1)
    hvd.broadcast_optimizer_state(sgd, root_rank=0, model=embedding)
    assert embedding.weight.grad.is_sparse


def check_objects_on_a_set(rank: int, size: int) -> None:
    members = [r for r in range(size) if r % 2 == rank % 2]
    evens = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
    odds = hvd.add_process_set([r for r in range(size) if r % 2 == 1])
    mine = evens if rank % 2 == 0 else odds
    obj = {"from": members[0], "list": [1, 2]} if rank == members[0] else None
    got = hvd.broadcast_object(obj, root_rank=members[0], process_set=mine)
    assert got == {"from": members[0], "list": [1, 2]}, got
    assert hvd.allgather_object({"r": rank}, process_set=mine) == [{"r": r} for r in members]
    hvd.barrier()
    hvd.remove_process_set(odds)
    hvd.remove_process_set(evens)


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check_scale_factors(rank, size)
    check_average_divides(rank, size)
    check_reducescatter_gradients(rank, size)
    check_sparse(rank, size)
    check_sparse_optimizer(rank, size)
    check_broadcast_state_without_grad(rank, size)
    check_objects_on_a_set(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
