"""Adasum (op=kolo.Adasum / hvd.Adasum) against a NumPy reference of the same recursion: pairwise
combination a' = (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b, ranks p..n-1 folded into ranks
0..n-p-1 first (n not a power of two), then the binary tree over the p low ranks."""

import sys

import numpy as np

import kolo

TOLERANCE = {np.float64: 1e-12, np.float32: 2e-5, np.float16: 2e-2}


def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ab, aa, bb = a64 @ b64, a64 @ a64, b64 @ b64
    ca = 1.0 if aa == 0 else 1.0 - ab / (2 * aa)
    cb = 1.0 if bb == 0 else 1.0 - ab / (2 * bb)
    return (ca * a64 + cb * b64).astype(a.dtype)


def reference(vectors: list) -> np.ndarray:
    v = list(vectors)
    n = len(v)
    p = 1
    while p * 2 <= n:
        p *= 2
    for i in range(n - p):
        v[i] = combine(v[i], v[i + p])
    d = 1
    while d < p:
        for base in range(0, p, 2 * d):
            v[base] = combine(v[base], v[base + d])
        d *= 2
    return v[0]


def inputs(size: int, length: int, dtype, seed: int) -> list:
    """Correlated gradients (a shared part plus each rank's own), where Adasum is neither the
    sum nor the average."""
    shared = np.random.default_rng(seed).standard_normal(length)
    return [(shared + np.random.default_rng(seed * 100 + r + 1).standard_normal(length))
            .astype(dtype) for r in range(size)]


def close(got: np.ndarray, want: np.ndarray, dtype) -> bool:
    scale = max(1.0, float(np.abs(want.astype(np.float64)).max(initial=0)))
    return bool(np.abs(got.astype(np.float64) - want.astype(np.float64)).max(initial=0)
                <= TOLERANCE[dtype] * scale)


def check_values(rank: int, size: int) -> None:
    for seed, dtype in enumerate((np.float64, np.float32, np.float16)):
        for length in (1, 2, 37, 1000):
            xs = inputs(size, length, dtype, seed * 10 + length)
            got = kolo.allreduce(xs[rank], op=kolo.Adasum, name=f"adasum.{dtype.__name__}.{length}")
            want = reference(xs)
            assert got.dtype == dtype and close(got, want, dtype), (dtype, length, got, want)
            # Not just a sum or an average: the reference differs from both here.
            if length >= 37 and dtype != np.float16:
                total = sum(x.astype(np.float64) for x in xs)
                assert not close(got, total.astype(dtype), dtype)
                assert not close(got, (total / size).astype(dtype), dtype)
    # Identical gradients are kept (not multiplied by size); orthogonal ones are added.
    same = np.array([1.0, -2.0, 3.0])
    assert np.allclose(kolo.allreduce(same, op=kolo.Adasum, name="adasum.same"), same)
    basis = np.zeros(size)
    basis[rank] = rank + 1.0
    assert np.allclose(kolo.allreduce(basis, op=kolo.Adasum, name="adasum.orthogonal"),
                       np.arange(1.0, size + 1))
    zeros = np.zeros(4, np.float32)
    assert np.array_equal(kolo.allreduce(zeros, op=kolo.Adasum, name="adasum.zeros"), zeros)
    # Grouped: each tensor gets its own dot products.
    xs = inputs(size, 9, np.float32, 7)
    ys = inputs(size, 4, np.float32, 8)
    gx, gy = kolo.grouped_allreduce([xs[rank], 3 * ys[rank]], op=kolo.Adasum, name="adasum.group")
    assert close(gx, reference(xs), np.float32) and close(gy, reference([3 * y for y in ys]),
                                                           np.float32)
    # Scale factors apply around the reduction.
    scaled = kolo.allreduce(xs[rank], op=kolo.Adasum, prescale_factor=2.0, postscale_factor=0.25)
    assert close(scaled, reference([2 * x for x in xs]) * 0.25, np.float32)


def check_errors(rank: int, size: int) -> None:
    try:
        kolo.allreduce(np.ones(3, np.int32), op=kolo.Adasum, name="adasum.int")
        raise AssertionError("Adasum on int32 accepted")
    except kolo.KoloError as error:
        assert "adasum.int" in str(error) and "int32" in str(error), error
    assert np.array_equal(kolo.allreduce(np.ones(2), op=kolo.Sum), np.full(2, float(size)))


def check_optimizer(rank: int, size: int) -> None:
    import torch
    import horovod.torch as hvd

    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    start = [p.detach().clone() for p in model.parameters()]
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)
    torch.manual_seed(100 + rank)
    x = torch.randn(8, 5)
    # This rank's own gradients, from a copy without hooks: the optimizer's hooks reduce p.grad
    # in place in the background as soon as backward produced it.
    plain = torch.nn.Linear(5, 3)
    plain.load_state_dict(model.state_dict())
    plain(x).pow(2).sum().backward()
    local = [p.grad.detach().clone() for p in plain.parameters()]
    model(x).pow(2).sum().backward()
    opt.step()
    for p, p0, g in zip(model.parameters(), start, local):
        gathered = hvd.allgather(g.unsqueeze(0)).numpy()
        want = reference([gathered[r].reshape(-1) for r in range(size)]).reshape(g.shape)
        assert np.allclose((p0 - p.detach()).numpy(), want, atol=1e-5), (p0 - p, want)


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    check_values(rank, size)
    check_errors(rank, size)
    if "--torch" in sys.argv:
        check_optimizer(rank, size)
    kolo.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
