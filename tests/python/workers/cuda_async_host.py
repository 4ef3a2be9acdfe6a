"""CUDA tensors through the asynchronous host path (needs a GPU; every rank on GPU 0 when the
test starts two ranks on a one-GPU machine). Values of every collective, in place and not; the
order: a tensor still being written by a long kernel on the caller's stream when submitted must
be reduced with its final values; the blocking staging copy is never used; the path's warning."""

import sys
import warnings

import torch

import horovod.torch as hvd
from kolo.torch import staging


def blocking_copy_used(tensor):
    raise AssertionError("the blocking .to('cpu') staging ran on the asynchronous host path")


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    staging.to_host = blocking_copy_used
    device = torch.device("cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = hvd.allreduce(torch.full((5,), float(rank + 1), device=device), op=hvd.Sum)
    assert total.device.type == "cuda" and total.tolist() == [size * (size + 1) / 2] * 5, total
    if rank == 0:
        texts = [str(w.message) for w in caught]
        assert any("cuda tensors" in t and "async host path" in t for t in texts), texts

    # Ordering: the tensor is written after a long kernel on the caller's stream; the op is
    # submitted before that work has run, and must still see the final values.
    x = torch.zeros(1 << 20, device=device)
    torch.cuda._sleep(200_000_000)  # keeps the stream busy (about 0.1 s of GPU cycles)
    x.fill_(rank + 1.0)
    handle = hvd.allreduce_async_(x, op=hvd.Sum, name="ordered")
    hvd.synchronize(handle)
    assert torch.all(x == size * (size + 1) / 2).item(), x[:4]

    gathered = hvd.allgather(torch.full((rank + 1, 2), float(rank), device=device))
    expected = torch.cat([torch.full((r + 1, 2), float(r)) for r in range(size)])
    assert gathered.device.type == "cuda" and torch.equal(gathered.cpu(), expected)
    root = torch.full((3,), float(rank), device=device)
    hvd.broadcast_(root, root_rank=0)
    assert root.tolist() == [0.0] * 3
    sent = torch.arange(size, dtype=torch.float32, device=device) + 10 * rank
    received = hvd.alltoall(sent)
    assert received.tolist() == [10.0 * r + rank for r in range(size)], received
    scattered = hvd.reducescatter(torch.ones(size * 2, device=device), op=hvd.Sum)
    assert scattered.device.type == "cuda" and scattered.tolist() == [float(size)] * 2

    model = torch.nn.Linear(4, 1).to(device)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    model(torch.ones(8, 4, device=device) * (rank + 1)).sum().backward()
    optimizer.step()
    weights = hvd.allgather(model.weight.detach().reshape(1, -1))
    assert torch.allclose(weights[0], weights[-1]), weights  # every rank applied the same average
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
