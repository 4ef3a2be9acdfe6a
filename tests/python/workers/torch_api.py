"""horovod.torch API parity on kolo: basics, every collective form, reduction ops, compression,
autograd (checked against finite differences), object helpers and optimizer-state broadcast."""

import os
import sys
import warnings

import torch

import horovod.torch as hvd
import kolo.torch


def check_before_init() -> None:
    try:
        hvd.allreduce(torch.ones(2))
    except hvd.HorovodInternalError as error:
        assert "init" in str(error), error
    else:
        raise AssertionError("allreduce before init() did not fail")


def check_basics(rank: int, size: int) -> None:
    assert hvd is kolo.torch and hvd.is_initialized()
    import horovod.torch.mpi_ops as mpi_ops
    from horovod.torch.optimizer import DistributedOptimizer
    assert mpi_ops is kolo.torch.mpi_ops and DistributedOptimizer is hvd.DistributedOptimizer
    assert 0 <= rank < size and hvd.local_size() == size and hvd.local_rank() == rank
    assert hvd.cross_size() == 1 and hvd.cross_rank() == 0
    # Built iff the plugin sits beside libkolo.so; never enabled under plain kolorun.
    plugin = os.path.join(os.path.dirname(os.path.realpath(kolo._core.__file__)), "libkolo_mpi.so")
    assert hvd.mpi_built() is os.path.exists(plugin) and hvd.mpi_enabled() is False
    assert hvd.mpi_threads_supported() is False
    assert hvd.gloo_built() is True and hvd.gloo_enabled() is True
    # True exactly where kolo loads NCCL and the CUDA runtime here (False with a CPU torch).
    loaded = kolo._core.nccl_status()["loaded"] and kolo._core.cuda_status()["loaded"]
    assert hvd.nccl_built() is bool(loaded)
    assert hvd.global_process_set.size() == size and hvd.global_process_set.rank() == rank


def check_allreduce(rank: int, size: int) -> None:
    x = torch.arange(5, dtype=torch.float32) + rank
    total = sum(torch.arange(5, dtype=torch.float32) + r for r in range(size))
    assert torch.allclose(hvd.allreduce(x), total / size)
    assert torch.allclose(hvd.allreduce(x, op=hvd.Sum), total)
    assert torch.equal(x, torch.arange(5, dtype=torch.float32) + rank), "input modified"
    assert torch.equal(hvd.allreduce(x, op=hvd.Min), torch.arange(5, dtype=torch.float32))
    assert torch.equal(hvd.allreduce(x, op=hvd.Max),
                       torch.arange(5, dtype=torch.float32) + size - 1)
    prod = torch.full((3,), float(rank + 1))
    assert torch.equal(hvd.allreduce(prod, op=hvd.Product), torch.full((3,), float(
        torch.arange(1, size + 1).prod())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert torch.allclose(hvd.allreduce(x, average=False), total)
        assert torch.allclose(hvd.allreduce(x, average=True), total / size)
    try:
        hvd.allreduce(x, average=True, op=hvd.Sum)
        raise AssertionError("average and op together accepted")
    except ValueError:
        pass
    scaled = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
    assert torch.allclose(scaled, total)
    # fp16 compression: sent as float16, returned in the input's dtype.
    half = hvd.allreduce(x, compression=hvd.Compression.fp16, op=hvd.Sum)
    assert half.dtype == torch.float32 and torch.allclose(half, total)
    # in place, sync and async; handles poll True once done
    y = x.clone()
    assert hvd.allreduce_(y, op=hvd.Sum) is y and torch.allclose(y, total)
    y = x.clone()
    handle = hvd.allreduce_async_(y, name="inplace.async", op=hvd.Sum)
    assert hvd.synchronize(handle) is y and torch.allclose(y, total)
    handle = hvd.allreduce_async(x, name="outofplace.async")
    out = hvd.synchronize(handle)
    assert out is not x and torch.allclose(out, total / size)
    handle = hvd.allreduce_async(torch.ones(2), op=hvd.Sum)
    while not hvd.poll(handle):
        pass
    assert torch.equal(hvd.synchronize(handle), torch.full((2,), float(size)))
    # integer dtype and a non-contiguous input (out of place copies it)
    ints = torch.arange(6, dtype=torch.int64).reshape(2, 3).t()
    assert torch.equal(hvd.allreduce(ints, op=hvd.Sum), ints * size)


def check_grouped(rank: int, size: int) -> None:
    tensors = [torch.full((3,), float(rank)), torch.full((2, 2), float(rank + 1))]
    got = hvd.grouped_allreduce(tensors, op=hvd.Sum)
    assert torch.allclose(got[0], torch.full((3,), float(sum(range(size)))))
    assert torch.allclose(got[1], torch.full((2, 2), float(sum(range(1, size + 1)))))
    handle = hvd.grouped_allreduce_async(tensors, name="grouped.async")
    avg = hvd.synchronize(handle)
    assert torch.allclose(avg[0], torch.full((3,), (size - 1) / 2))
    inplace = [t.clone() for t in tensors]
    assert hvd.grouped_allreduce_(inplace, op=hvd.Max)[0] is inplace[0]
    assert torch.equal(inplace[0], torch.full((3,), float(size - 1)))
    inplace = [t.clone() for t in tensors]
    result = hvd.synchronize(hvd.grouped_allreduce_async_(inplace, op=hvd.Min))
    assert result[1] is inplace[1] and torch.equal(inplace[1], torch.ones(2, 2))


def check_allgather_broadcast(rank: int, size: int) -> None:
    mine = torch.full((rank + 1, 2), float(rank))
    gathered = hvd.allgather(mine)
    want = torch.cat([torch.full((r + 1, 2), float(r)) for r in range(size)])
    assert torch.equal(gathered, want)
    assert torch.equal(hvd.synchronize(hvd.allgather_async(mine, name="gather.async")), want)
    x = torch.full((4,), float(rank))
    root = size - 1
    b = hvd.broadcast(x, root)
    assert torch.equal(b, torch.full((4,), float(root)))
    assert torch.equal(x, torch.full((4,), float(rank)))
    assert torch.equal(hvd.synchronize(hvd.broadcast_async(x, 0)), torch.zeros(4))
    y = x.clone()
    assert hvd.broadcast_(y, root) is y and torch.equal(y, b)
    y = x.clone()
    hvd.synchronize(hvd.broadcast_async_(y, 0, name="bcast.async"))
    assert torch.equal(y, torch.zeros(4))
    hvd.barrier()


def numeric_gradient(objective, x: torch.Tensor, size: int, rank: int, rows: int) -> torch.Tensor:
    """d objective / d x on this rank by central differences; every rank takes part in every
    evaluation (rank q perturbs its element i while the others hold still)."""
    eps = 1e-6
    grad = torch.zeros_like(x)
    for q in range(size):
        for i in range(rows):
            values = []
            for sign in (1.0, -1.0):
                xp = x.clone()
                if rank == q and i < x.numel():
                    xp.view(-1)[i] += sign * eps
                values.append(objective(xp))
            if rank == q and i < x.numel():
                grad.view(-1)[i] = (values[0] - values[1]) / (2 * eps)
    return grad


def check_autograd(rank: int, size: int) -> None:
    torch.manual_seed(100 + rank)
    w = torch.randn(3, dtype=torch.float64)  # each rank's loss weights its output differently

    # allreduce: the gradient of sum_r L_r, where L_r = <w_r, allreduce(x)>^2 / 2 on rank r
    for op in (hvd.Sum, hvd.Average):
        def objective(x, op=op):
            loss = (w * hvd.allreduce(x, op=op)).sum() ** 2 / 2
            return hvd.allreduce(loss.detach(), op=hvd.Sum).item()
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        ((w * hvd.allreduce(x, op=op)).sum() ** 2 / 2).backward()
        want = numeric_gradient(objective, x.detach(), size, rank, 3)
        assert torch.allclose(x.grad, want, atol=1e-5), (op, x.grad, want)

    # allgather and broadcast, as Horovod's: the gradient of mean_r L_r
    wg = torch.randn(sum(r + 1 for r in range(size)) * 2, dtype=torch.float64).reshape(-1, 2)

    def gather_objective(x):
        loss = (wg * hvd.allgather(x) ** 2).sum()
        return hvd.allreduce(loss.detach(), op=hvd.Average).item()
    x = torch.randn(rank + 1, 2, dtype=torch.float64, requires_grad=True)
    (wg * hvd.allgather(x) ** 2).sum().backward()
    want = numeric_gradient(gather_objective, x.detach(), size, rank, size * 2)
    assert torch.allclose(x.grad, want, atol=1e-5), (x.grad, want)

    root = size - 1

    def bcast_objective(x):
        loss = (w * hvd.broadcast(x, root) ** 3).sum()
        return hvd.allreduce(loss.detach(), op=hvd.Average).item()
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    (w * hvd.broadcast(x, root) ** 3).sum().backward()
    want = numeric_gradient(bcast_objective, x.detach(), size, rank, 3)
    assert torch.allclose(x.grad, want, atol=1e-5), (x.grad, want)
    if rank != root:
        assert torch.equal(x.grad, torch.zeros(3, dtype=torch.float64))

    # grouped allreduce is differentiable too
    a = torch.ones(2, dtype=torch.float64, requires_grad=True)
    b = torch.ones(3, dtype=torch.float64, requires_grad=True)
    ra, rb = hvd.grouped_allreduce([a, b], op=hvd.Sum)
    (ra.sum() * (rank + 1) + rb.sum()).backward()
    assert torch.allclose(a.grad, torch.full((2,), float(sum(range(1, size + 1))),
                                             dtype=torch.float64))
    assert torch.allclose(b.grad, torch.full((3,), float(size), dtype=torch.float64))


def check_objects(rank: int, size: int) -> None:
    obj = {"rank": rank, "lr": 0.1 * (rank + 1), "fn": lambda v: v + 1}
    got = hvd.broadcast_object(obj, root_rank=size - 1)
    assert got["rank"] == size - 1 and got["fn"](1) == 2
    everyone = hvd.allgather_object({"r": rank, "pad": "x" * rank})
    assert [o["r"] for o in everyone] == list(range(size))
    model = torch.nn.Linear(3, 2)
    torch.nn.init.constant_(model.weight, float(rank))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    assert torch.equal(model.weight, torch.zeros(2, 3))
    torch.nn.init.constant_(model.bias, float(rank))
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=size - 1)
    assert torch.equal(model.bias, torch.full((2,), float(size - 1)))


def check_optimizer_state(rank: int, size: int) -> None:
    makers = {
        "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1 * (rank + 1), momentum=0.9),
        "adam": lambda ps: torch.optim.Adam(ps, lr=0.01 * (rank + 1)),
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1 * (rank + 1)),
    }
    for kind, make in makers.items():
        model = torch.nn.Linear(4, 2)
        opt = make(model.parameters())
        for _ in range(rank + 1):  # rank-dependent state: different step counts and buffers
            model.zero_grad()
            (model(torch.full((3, 4), float(rank + 1))).sum()).backward()
            opt.step()
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        state = opt.state_dict()
        flat = [t.reshape(-1).double() for entry in state["state"].values()
                for t in entry.values() if torch.is_tensor(t)]
        mine = torch.cat(flat)
        assert torch.equal(mine, hvd.broadcast(mine, 0, name=f"check.{kind}")), kind
        group = {k: v for k, v in state["param_groups"][0].items() if k != "params"}
        assert hvd.broadcast_object(group, 0, name=f"group.{kind}") == group, kind
        # Training continues with the received state.
        opt.zero_grad()
        model(torch.ones(1, 4)).sum().backward()
        opt.step()

    # Fresh state everywhere: as Horovod, one local step on zero gradients creates it (Adam's
    # update is then zero: parameters untouched); every trainable parameter gets a gradient.
    model = torch.nn.Linear(4, 2)
    before = [p.clone() for p in model.parameters()]
    opt = torch.optim.Adam(model.parameters())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert len(opt.state_dict()["state"]) == 2
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in model.parameters())
    # Root steps further, the others receive its step count.
    if rank == 0:
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert len(opt.state_dict()["state"]) == 2
    assert float(opt.state_dict()["state"][0]["step"]) == 2.0


def check_mismatch(rank: int, size: int) -> None:
    shape = (4,) if rank == 0 else (5,)
    try:
        hvd.allreduce(torch.ones(shape), name="bad.shape")
    except hvd.HorovodInternalError as error:
        assert "bad.shape" in str(error) and "rank 0" in str(error), error
    else:
        raise AssertionError("shape mismatch not reported")


def main() -> None:
    check_before_init()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check_basics(rank, size)
    check_allreduce(rank, size)
    check_grouped(rank, size)
    check_allgather_broadcast(rank, size)
    check_autograd(rank, size)
    check_objects(rank, size)
    check_optimizer_state(rank, size)
    check_mismatch(rank, size)
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(size)))
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
