"""Every collective on tensors of one device against the same collective on CPU tensors, per
dtype (needs a GPU for `cuda`; `cpu` checks this script itself without one). Whatever path kolo
takes for the device (NCCL, the async host path), the results must equal the CPU's bit for bit
for integers and within rounding for floats. Usage: device_vs_cpu.py DEVICE."""

import sys

import torch

import horovod.torch as hvd

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
TYPES = (torch.uint8, torch.int8, torch.int32, torch.int64) + FLOATS


def same(device_result, cpu_result, what):
    got = device_result.cpu()
    assert got.dtype == cpu_result.dtype and got.shape == cpu_result.shape, (what, got, cpu_result)
    if got.dtype in FLOATS:
        ok = torch.allclose(got.double(), cpu_result.double(), rtol=1e-2, atol=1e-2)
    else:
        ok = torch.equal(got, cpu_result)
    assert ok, (what, got, cpu_result)


def first(result):
    """alltoall with splits returns (output, received_splits), as Horovod's."""
    return result[0] if isinstance(result, tuple) else result


def both(device, make, run, what):
    """run(make(device)) on the device and run(make('cpu')) on the CPU, compared; the device's
    result stays on the device (NCCL's output allocated there, or the host path's copy back)."""
    got = run(make(device), what + "/dev")
    assert first(got).device.type == device.type, (what, first(got).device)
    same(got, run(make(torch.device("cpu")), what + "/cpu"), what)


def both_grouped(device, run, tensors, what):
    """A grouped op on the device against the same on the CPU, member by member."""
    on_device = run([t.to(device) for t in tensors], what + "/dev")
    for got, want in zip(on_device, run(tensors, what + "/cpu")):
        assert got.device.type == device.type, (what, got.device)
        same(got, want, what)


def main() -> None:
    device = torch.device(sys.argv[1])
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if device.type == "cuda":
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    splits = torch.tensor([(r + rank) % 2 + 1 for r in range(size)])  # rows to each rank
    for dtype in TYPES:
        name = str(dtype).split(".")[1]

        def values(dev, rows=3, dtype=dtype):
            base = torch.arange(rows * 4, dtype=torch.float64).reshape(rows, 4) % 7 + rank
            return base.to(dtype).to(dev)

        ops = [hvd.Sum, hvd.Min, hvd.Max] + ([hvd.Average] if dtype in FLOATS else [])
        for op in ops:
            both(device, values, lambda t, n, op=op: hvd.allreduce(t, op=op, name=n),
                 f"allreduce {name} {op}")
        if dtype in FLOATS:
            both(device, values,
                 lambda t, n: hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5,
                                            postscale_factor=2.0, name=n),
                 f"allreduce scaled {name}")
            grouped = hvd.grouped_allreduce([values(device), values(device, 5)], op=hvd.Sum,
                                            name=f"grouped {name}")
            for got, rows in zip(grouped, (3, 5)):
                same(got, hvd.allreduce(values("cpu", rows), op=hvd.Sum,
                                        name=f"grouped {name} cpu {rows}"), f"grouped {name}")
        both(device, lambda dev: values(dev, rank + 1),
             lambda t, n: hvd.allgather(t, name=n), f"allgather uneven {name}")
        both(device, values, lambda t, n: hvd.broadcast(t, root_rank=size - 1, name=n),
             f"broadcast {name}")
        both(device, lambda dev: values(dev, int(splits.sum())),
             lambda t, n: first(hvd.alltoall(t, splits=splits, name=n)),
             f"alltoall splits {name}")
        both(device, lambda dev: values(dev, 2 * size),
             lambda t, n: hvd.reducescatter(t, op=hvd.Sum, name=n), f"reducescatter {name}")
        pair = [values("cpu", rank + 1), values("cpu", 2 * size)]
        both_grouped(device, lambda ts, n: hvd.grouped_allgather(ts, name=n), pair,
                f"grouped allgather {name}")
        both_grouped(device, lambda ts, n: hvd.grouped_reducescatter(ts, op=hvd.Sum, name=n),
                [values("cpu", 3), values("cpu", 2 * size)], f"grouped reducescatter {name}")
        if dtype in FLOATS:
            both(device, lambda dev: values(dev, 2 * size),
                 lambda t, n: hvd.reducescatter(t, op=hvd.Average, name=n),
                 f"reducescatter average {name}")
    # Adasum and sparse gradients, which Horovod runs on GPU tensors too (issue 23 point 2).
    for dtype in (torch.float16, torch.float32, torch.float64):
        both(device, lambda dev, dtype=dtype: (torch.arange(8, dtype=torch.float64) % 5 - rank)
             .to(dtype).to(dev), lambda t, n: hvd.allreduce(t, op=hvd.Adasum, name=n),
             f"adasum {str(dtype).split('.')[1]}")

    def sparse(dev):
        indices = torch.tensor([[rank, rank + 2, 5]])  # 5 on every rank: summed
        return torch.sparse_coo_tensor(indices, torch.tensor([1.0, 2.0, 3.0 + rank]), (8,),
                                       check_invariants=True, device=dev)

    for op in (hvd.Sum, hvd.Average):
        got = hvd.sparse_allreduce_async(sparse(device), f"sparse {op}/dev", op)()
        want = hvd.sparse_allreduce_async(sparse("cpu"), f"sparse {op}/cpu", op)()
        assert got.is_sparse and got.device.type == device.type, (op, got)
        same(got.to_dense(), want.to_dense(), f"sparse allreduce {op}")
    embedding = torch.nn.Embedding(6, 2, sparse=True).to(device)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(embedding.parameters(), lr=1.0),
                                         named_parameters=embedding.named_parameters())
    hvd.broadcast_parameters(embedding.state_dict(), root_rank=0)
    before = embedding.weight.detach().cpu().clone()
    embedding(torch.tensor([rank, 4], device=device)).sum().backward()
    optimizer.step()
    # Each looked-up row moves by -lr x (its count over all ranks) / size.
    moved = torch.zeros(6, 1)
    for r in range(size):
        moved[[r, 4]] += 1.0 / size
    same(embedding.weight.detach(), before - moved.expand(6, 2), "sparse embedding step")
    hvd.barrier()
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
