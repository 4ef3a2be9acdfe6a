"""DistributedOptimizer on kolo: equals one big batch (also with gradient accumulation, groups and
fp16), unused and frozen parameters do not hang, synchronize()/skip_synchronize() and zero_grad
rules as Horovod's, and a torch.compile'd model trains."""

import copy
import sys
import warnings

import torch
import torch.nn.functional as F

import horovod.torch as hvd

BATCH = 6  # per rank


def make_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def data_of(rank: int, step: int):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(BATCH, 5, generator=g), torch.randint(0, 3, (BATCH,), generator=g)


def reference(model, steps: int, size: int, lr: float):
    """The same training on one process with every rank's batch concatenated."""
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        xs, ys = zip(*[data_of(r, step) for r in range(size)])
        opt.zero_grad()
        F.cross_entropy(model(torch.cat(xs)), torch.cat(ys)).backward()
        opt.step()
    return model


def check_matches_big_batch(rank: int, size: int, passes: int = 1, **options) -> None:
    model = make_model(seed=rank)  # different on purpose: broadcast_parameters fixes it
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    want = reference(model, 3, size, lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   backward_passes_per_step=passes, **options)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for step in range(3):
        x, y = data_of(rank, step)
        opt.zero_grad()
        for part in range(passes):  # micro-batches; each loss scaled by 1/passes
            xs, ys = x.chunk(passes)[part], y.chunk(passes)[part]
            (F.cross_entropy(model(xs), ys) / passes).backward()
        opt.step()
    tol = 2e-3 if options.get("compression") is hvd.Compression.fp16 else 1e-5
    for (name, p), q in zip(model.named_parameters(), want.parameters()):
        assert torch.allclose(p, q, atol=tol), (name, options, passes, (p - q).abs().max())


class Branchy(torch.nn.Module):
    """`extra` is used on even ranks only; `frozen` never trains."""

    def __init__(self) -> None:
        super().__init__()
        self.main = torch.nn.Linear(4, 2)
        self.extra = torch.nn.Linear(4, 2)
        self.frozen = torch.nn.Linear(4, 2)
        self.frozen.requires_grad_(False)
        self.unused = torch.nn.Linear(4, 2)  # on no rank

    def forward(self, x, use_extra: bool):
        out = self.main(x) + self.frozen(x)
        return out + self.extra(x) if use_extra else out


def check_unused_and_frozen(rank: int, size: int) -> None:
    torch.manual_seed(0)
    model = Branchy()
    frozen = model.frozen.weight.clone()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters())
    x = torch.ones(2, 4)
    opt.zero_grad()
    model(x, use_extra=rank % 2 == 0).sum().backward()
    opt.step()
    users = len([r for r in range(size) if r % 2 == 0])
    # d sum / d bias = 2 (rows) on ranks that use `extra`, averaged over all ranks.
    assert torch.allclose(model.extra.bias.grad, torch.full((2,), 2.0 * users / size))
    assert torch.equal(model.unused.bias.grad, torch.zeros(2))
    assert torch.equal(model.frozen.weight, frozen) and model.frozen.weight.grad is None


def check_synchronize_rules(rank: int, size: int) -> None:
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = data_of(rank, 0)
    F.cross_entropy(model(x), y).backward()
    try:
        opt.zero_grad()
        raise AssertionError("zero_grad between backward and step accepted")
    except AssertionError as error:
        assert "zero_grad() was called after loss.backward()" in str(error), error
    opt.synchronize()  # gradient clipping sees averaged gradients
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    assert torch.allclose(norm, hvd.allreduce(norm, op=hvd.Max))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with opt.skip_synchronize():
            opt.step()
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step()  # after synchronize() without skip_synchronize(): Horovod warns
    assert any("skip_synchronize" in str(w.message) for w in caught)
    # Gradients computed twice before step() with backward_passes_per_step=1
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    try:
        F.cross_entropy(model(x), y).backward()
        raise AssertionError("second backward accepted")
    except AssertionError as error:
        assert "backward_passes_per_step" in str(error), error
    opt.synchronize()
    try:  # Horovod: the predivide factor only splits an Average
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum,
                                 gradient_predivide_factor=2.0)
        raise AssertionError("Adasum with gradient_predivide_factor accepted")
    except ValueError as error:
        assert "gradient_predivide_factor" in str(error)


def check_sparse(rank: int, size: int) -> None:
    """Sparse embedding gradients: allgathered (default) or densified (sparse_as_dense)."""
    for dense in (False, True):
        torch.manual_seed(0)
        emb = torch.nn.Embedding(10, 3, sparse=True)
        start = emb.weight.detach().clone()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                       named_parameters=[(f"emb.{dense}", emb.weight)],
                                       sparse_as_dense=dense)
        emb(torch.tensor([rank, rank + 1, 5])).sum().backward()
        opt.step()
        want = torch.zeros(10, 3)
        for r in range(size):
            for i in (r, r + 1, 5):
                want[i] += 1.0 / size
        assert torch.allclose(emb.weight, start - want), (dense, emb.weight - start)


def check_compiled(rank: int, size: int) -> None:
    model = make_model()
    compiled = torch.compile(model, backend="aot_eager")
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    first = None
    for step in range(4):
        x, y = data_of(rank, step % 2)
        opt.zero_grad()
        loss = F.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert torch.equal(flat, hvd.broadcast(flat, 0, name="compiled.check")), "ranks diverged"
    assert not torch.equal(flat, torch.cat([p.reshape(-1) for p in make_model().parameters()]))


def main() -> None:
    hvd.init()
    torch.set_num_threads(1)
    rank, size = hvd.rank(), hvd.size()
    check_matches_big_batch(rank, size)
    check_matches_big_batch(rank, size, passes=2)
    check_matches_big_batch(rank, size, groups=2)
    check_matches_big_batch(rank, size, compression=hvd.Compression.fp16)
    check_matches_big_batch(rank, size, gradient_predivide_factor=2.0)
    check_unused_and_frozen(rank, size)
    check_synchronize_rules(rank, size)
    check_sparse(rank, size)
    check_compiled(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
