"""The per-op fast paths of horovod.torch on kolo (bench/perop, docs/PERFORMANCE.md): host tensors
passed to the core as addresses, no autograd Function without a gradient to record, one-call
synchronize. Values at every dtype, in place and not, the same name reused (response cache) and
then reused with another shape (the cache entry falls back to negotiation), a batch of async ops,
and errors through the fast path that name the rank and the tensor."""

import sys

import torch

import horovod.torch as hvd


def check_values(rank: int, size: int) -> None:
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                  torch.int64, torch.int8, torch.uint8, torch.int16):
        x = torch.full((3, 2), rank + 1, dtype=dtype)
        out = hvd.allreduce(x, name=f"fast.{dtype}", op=hvd.Sum)
        assert out.dtype == dtype and out.shape == (3, 2), out
        assert torch.equal(out, torch.full((3, 2), size * (size + 1) // 2, dtype=dtype)), out
        assert torch.equal(x, torch.full((3, 2), rank + 1, dtype=dtype)), "input was modified"
    flags = torch.tensor([rank == 0, True])
    assert hvd.allreduce(flags, name="fast.bool", op=hvd.Max).tolist() == [True, True]
    # In place returns the caller's own tensor.
    y = torch.full((4,), float(rank))
    assert hvd.allreduce_(y, name="fast.inplace", op=hvd.Sum) is y
    assert y.tolist() == [float(sum(range(size)))] * 4
    # Average (the default) and scale factors.
    avg = hvd.allreduce(torch.full((2,), float(rank)), name="fast.avg")
    assert torch.allclose(avg, torch.full((2,), (size - 1) / 2)), avg
    scaled = hvd.allreduce(torch.ones(2), name="fast.scaled", op=hvd.Sum, prescale_factor=2.0,
                           postscale_factor=0.5)
    assert scaled.tolist() == [float(size)] * 2, scaled
    # Broadcast through the same path.
    b = torch.full((2, 2), float(rank))
    assert hvd.broadcast_(b, root_rank=size - 1, name="fast.bcast") is b
    assert torch.equal(b, torch.full((2, 2), float(size - 1)))
    # Not the fast path, same results: non-contiguous input, empty tensor.
    t = torch.arange(6.0).reshape(2, 3).t()
    assert torch.equal(hvd.allreduce(t, name="fast.strided", op=hvd.Sum), t * size)
    assert hvd.allreduce(torch.empty(0), name="fast.empty").numel() == 0


def check_cache_and_shape_change(rank: int, size: int) -> None:
    for step in range(20):  # the same name every step: served by the response cache
        out = hvd.allreduce(torch.full((5,), float(step + rank)), name="fast.step", op=hvd.Sum)
        assert out.tolist() == [float(size * step + sum(range(size)))] * 5, (step, out)
    # The same name with another shape: the cached entry is invalidated, the op renegotiated.
    out = hvd.allreduce(torch.ones(7, dtype=torch.float64), name="fast.step", op=hvd.Sum)
    assert out.tolist() == [float(size)] * 7 and out.dtype == torch.float64, out
    out = hvd.allreduce(torch.ones(5), name="fast.step", op=hvd.Sum)
    assert out.tolist() == [float(size)] * 5, out


def check_async_batch(rank: int, size: int) -> None:
    batch = [torch.full((2,), float(i + rank)) for i in range(100)]
    for _ in range(3):
        for i, t in enumerate(batch):
            t.fill_(float(i + rank))
        handles = [hvd.allreduce_async_(t, name=f"fast.async.{i}", op=hvd.Sum)
                   for i, t in enumerate(batch)]
        for i, h in enumerate(handles):
            assert hvd.synchronize(h) is batch[i]
            assert batch[i].tolist() == [float(size * i + sum(range(size)))] * 2


def check_async_handles(rank: int, size: int) -> None:
    """The async path's handles as Horovod's: poll then synchronize, synchronize out of order,
    twice (the second gives None), every dtype in place and not, broadcast."""
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
              torch.int64, torch.int8, torch.uint8, torch.int16)
    inputs = [torch.full((3,), rank + 1, dtype=d) for d in dtypes]
    copies = [t.clone() for t in inputs]
    out_of_place = [hvd.allreduce_async(t, name=f"fast.adtype.{t.dtype}", op=hvd.Sum)
                    for t in inputs]
    in_place = [hvd.allreduce_async_(t, name=f"fast.adtype_.{t.dtype}", op=hvd.Sum)
                for t in copies]
    flags = torch.tensor([rank == 0, False])
    flag_handle = hvd.allreduce_async_(flags, name="fast.abool", op=hvd.Max)
    bcast = torch.full((2,), float(rank))
    bcast_handle = hvd.broadcast_async_(bcast, root_rank=0, name="fast.abcast")
    expected = size * (size + 1) // 2
    while not hvd.poll(in_place[0]):  # poll, then synchronize the finished op
        pass
    for t, h in reversed(list(zip(copies, in_place))):  # out of order
        assert hvd.synchronize(h) is t
        assert torch.equal(t, torch.full((3,), expected, dtype=t.dtype)), t
    for t, h in zip(inputs, out_of_place):
        out = hvd.synchronize(h)
        assert out is not t and out.dtype == t.dtype, out
        assert torch.equal(out, torch.full((3,), expected, dtype=t.dtype)), out
        assert torch.equal(t, torch.full((3,), rank + 1, dtype=t.dtype)), "input was modified"
    assert hvd.synchronize(flag_handle).tolist() == [True, False]
    assert hvd.synchronize(bcast_handle) is bcast and bcast.tolist() == [0.0, 0.0]
    assert hvd.synchronize(in_place[0]) is None  # already synchronized, as Horovod
    assert hvd.synchronize(out_of_place[0]) is None


def check_async_batch_error(rank: int, size: int) -> None:
    """One tensor of a batch disagrees across ranks: its handle raises naming it, the rest of the
    batch completes with the right values."""
    batch = [torch.full((2 + (i == 5 and rank == size - 1),), float(rank)) for i in range(10)]
    handles = [hvd.allreduce_async_(t, name=f"fast.batcherr.{i}", op=hvd.Sum)
               for i, t in enumerate(batch)]
    for i, (t, h) in enumerate(zip(batch, handles)):
        if i != 5:
            assert hvd.synchronize(h) is t and t.tolist() == [float(sum(range(size)))] * 2
            continue
        try:
            hvd.synchronize(h)
        except hvd.HorovodInternalError as error:
            assert "fast.batcherr.5" in str(error) and "shape" in str(error), str(error)
        else:
            raise AssertionError("a mismatched tensor in an async batch did not fail")
        assert hvd.synchronize(h) is None  # forgotten after its error


def check_autograd(rank: int, size: int) -> None:
    w = torch.full((3,), float(rank + 1), requires_grad=True)
    out = hvd.allreduce(w, name="fast.grad", op=hvd.Sum)
    assert out.requires_grad
    out.sum().backward()
    assert w.grad.tolist() == [float(size)] * 3, w.grad
    with torch.no_grad():
        plain = hvd.allreduce(w, name="fast.nograd", op=hvd.Sum)
    assert not plain.requires_grad and plain.grad_fn is None
    assert plain.tolist() == [float(size * (size + 1) // 2)] * 3


def check_errors(rank: int, size: int) -> None:
    # Ranks disagree on the shape of one name: every rank gets an error naming it and the ranks.
    try:
        hvd.allreduce(torch.ones(2 + (rank == size - 1)), name="fast.mismatch", op=hvd.Sum)
    except hvd.HorovodInternalError as error:
        text = str(error)
        assert "fast.mismatch" in text and "rank" in text and "shape" in text, text
    else:
        raise AssertionError("a shape mismatch through the fast path did not fail")
    # A name cached with one shape, then submitted with a different one on one rank only.
    hvd.allreduce(torch.ones(4), name="fast.cached.mismatch", op=hvd.Sum)
    try:
        hvd.allreduce(torch.ones(4 + (rank == 0)), name="fast.cached.mismatch", op=hvd.Sum)
    except hvd.HorovodInternalError as error:
        assert "fast.cached.mismatch" in str(error), str(error)
    else:
        raise AssertionError("a shape mismatch on a cached name did not fail")
    # The job goes on after the errors.
    assert hvd.allreduce(torch.ones(1), name="fast.after", op=hvd.Sum).item() == size


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check_values(rank, size)
    check_cache_and_shape_change(rank, size)
    check_async_batch(rank, size)
    check_async_handles(rank, size)
    check_async_batch_error(rank, size)
    check_autograd(rank, size)
    check_errors(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    sys.exit(main())
