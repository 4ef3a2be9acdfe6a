"""hvd.join() with uneven data: rank r runs 3 + 2r steps of an allreduce and of a
DistributedOptimizer step, then joins. Every result is checked against a NumPy computation: a
joined rank contributes zeros, and Average still divides by the job's size (Horovod 0.28).
While a rank is joined, allgather and broadcast fail clearly and barrier still works; join()
returns the last rank to join on every rank, and a second round of uneven steps works too (each
rank joining with a different device, which CPU tensors ignore); join(-2) is refused.
Errors are RuntimeErrors (HorovodInternalError), as Horovod's join tests expect."""

import sys

import numpy as np
import torch

import horovod.torch as hvd


def steps_of(r):
    return 3 + 2 * r


def data(r, s):
    """What rank r feeds at step s (distinct per rank and step)."""
    return np.array([r + 1.0, 0.5 * s - r, 10.0 * r + s], dtype=np.float64)


def expected_allreduce(s, size):
    total = sum(data(r, s) for r in range(size) if steps_of(r) > s)
    return total / size


def expected_weight(w0, r, size, lr):
    w = w0.copy()
    for s in range(steps_of(r)):
        grads = [data(q, s) for q in range(size) if steps_of(q) > s]
        w -= lr * sum(grads) / size
    return w


def uneven_round(rank, size, tag, device=-1):
    lr = 0.1
    model = torch.nn.Linear(3, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.25, -0.5, 1.0]], dtype=torch.float64))
    w0 = model.weight.detach().numpy()[0].copy()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                   named_parameters=model.named_parameters())
    for s in range(steps_of(rank)):
        x = torch.from_numpy(data(rank, s))
        got = hvd.allreduce(x, name=f"{tag}.x").numpy()
        assert np.allclose(got, expected_allreduce(s, size)), (s, got, expected_allreduce(s, size))
        summed = hvd.allreduce(x, name=f"{tag}.x.sum", op=hvd.Sum).numpy()
        assert np.allclose(summed, expected_allreduce(s, size) * size), (s, summed)
        opt.zero_grad()
        # loss = w . d, so the gradient is d: the averaged gradient is known exactly.
        model(x.unsqueeze(0)).sum().backward()
        opt.step()
        if rank > 0 and s == steps_of(0):
            # Rank 0 has certainly joined by now (its last step was s - 1 and this step's
            # allreduces completed with its zeros): the ops that need every rank fail clearly.
            try:
                hvd.allgather(torch.ones(2), name=f"{tag}.gather")
            except hvd.HorovodInternalError as error:
                assert isinstance(error, RuntimeError), type(error)  # what Horovod's tests catch
                assert "not supported while ranks have joined" in str(error), error
                assert "rank 0" in str(error), error
                print(f"allgather while joined: {error}")
            else:
                raise AssertionError("allgather with a joined rank did not fail")
            try:
                hvd.broadcast(torch.ones(2), root_rank=size - 1, name=f"{tag}.bcast")
            except hvd.HorovodInternalError as error:
                assert "not supported while ranks have joined" in str(error), error
            else:
                raise AssertionError("broadcast with a joined rank did not fail")
            for label, call in (("alltoall", lambda: hvd.alltoall(torch.ones(2 * size),
                                                                  name=f"{tag}.a2a")),
                                ("reducescatter", lambda: hvd.reducescatter(
                                    torch.ones(2 * size), name=f"{tag}.rs"))):
                try:
                    call()
                except RuntimeError as error:
                    assert "not supported while ranks have joined" in str(error), error
                else:
                    raise AssertionError(f"{label} with a joined rank did not fail")
            hvd.barrier()  # joined ranks take part in barriers
    w = model.weight.detach().numpy()[0]
    assert np.allclose(w, expected_weight(w0, rank, size, lr)), (
        w, expected_weight(w0, rank, size, lr))
    last = hvd.join(device)
    assert last == size - 1, last
    return last


def each_rank_joins_first(rank, size):
    """As Horovod's test_horovod_join_allgather/broadcast: rank f joins at once, the others'
    allgather and broadcast fail with a RuntimeError, then they join; join() returns the same
    rank, not f, everywhere. The allgather and allgather_object are unnamed, as there: the
    refused allgather (made by some ranks only) must not shift allgather_object's names."""
    for first in range(size):
        if rank == first:
            last = hvd.join()
        else:
            # Each lambda runs within this iteration, so reading `first` late is right; the
            # allgather is unnamed, as in Horovod's test (a refused unnamed op must not shift the
            # names the ranks agree on).
            for call in (lambda: hvd.allgather(torch.ones(3, 2)),
                         lambda: hvd.broadcast(torch.ones(3), root_rank=rank,
                                               name=f"first{first}.bcast")):  # noqa: B023
                try:
                    call()
                except RuntimeError as error:
                    assert f"rank {first}" in str(error), error
                else:
                    raise AssertionError(f"a collective with rank {first} joined did not fail")
            last = hvd.join()
        assert last != first, (first, last)
        assert hvd.allgather_object(last) == [last] * size


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    each_rank_joins_first(rank, size)
    uneven_round(rank, size, "round1")
    # The joined state resets once every rank joined: a second epoch of uneven steps works, with
    # each rank naming another device for its zeros (ranks may differ; CPU tensors' zeros stay
    # in host memory whatever the device).
    uneven_round(rank, size, "round2", device=rank)
    try:
        hvd.join(-2)
    except ValueError as error:
        assert f"rank {rank}: join(device=-2)" in str(error), error
    else:
        raise AssertionError("join(-2) was accepted")
    # And ordinary collectives (cached again) afterwards.
    for _ in range(3):
        got = hvd.allreduce(torch.ones(4), name="after", op=hvd.Sum)
        assert torch.equal(got, torch.full((4,), float(size)))
    assert hvd.join() in range(size)  # all join at once: some rank is last
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
