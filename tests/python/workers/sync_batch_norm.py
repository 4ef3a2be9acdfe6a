"""hvd.SyncBatchNorm against one torch BatchNorm over the concatenated batch of every rank (ranks
hold batches of different sizes): outputs, input gradients, weight/bias gradients (summed over
ranks), running statistics, and eval mode."""

import sys

import torch

import horovod.torch as hvd


def batch_of(rank: int, shape_tail: tuple, step: int) -> tuple:
    g = torch.Generator().manual_seed(1000 * step + rank)
    rows = rank + 2  # unequal batch sizes
    x = torch.randn((rows,) + shape_tail, generator=g, dtype=torch.float64) * (rank + 1) + rank
    w = torch.randn((rows,) + shape_tail, generator=g, dtype=torch.float64)
    return x, w


def check(rank: int, size: int, shape_tail: tuple, momentum) -> None:
    channels = shape_tail[0]
    sync = hvd.SyncBatchNorm(channels, momentum=momentum).double()
    ref = torch.nn.BatchNorm1d(channels, momentum=momentum).double() if len(shape_tail) < 3 \
        else torch.nn.BatchNorm2d(channels, momentum=momentum).double()
    with torch.no_grad():
        for module in (sync, ref):
            module.weight.copy_(torch.linspace(0.5, 2.0, channels))
            module.bias.copy_(torch.linspace(-1.0, 1.0, channels))
    for step in range(3):
        batches = [batch_of(r, shape_tail, step) for r in range(size)]
        start = sum(b[0].shape[0] for b in batches[:rank])
        x = batches[rank][0].clone().requires_grad_()
        out = sync(x)
        (out * batches[rank][1]).sum().backward()

        full_x = torch.cat([b[0] for b in batches]).requires_grad_()
        full_out = ref(full_x)
        (full_out * torch.cat([b[1] for b in batches])).sum().backward()
        mine = slice(start, start + x.shape[0])
        assert torch.allclose(out, full_out[mine], atol=1e-10), (step, out, full_out[mine])
        assert torch.allclose(x.grad, full_x.grad[mine], atol=1e-10), (x.grad, full_x.grad[mine])
        for name in ("weight", "bias"):
            summed = hvd.allreduce(getattr(sync, name).grad, op=hvd.Sum, name=f"sbn.{name}")
            assert torch.allclose(summed, getattr(ref, name).grad, atol=1e-10), name
        assert torch.allclose(sync.running_mean, ref.running_mean, atol=1e-12)
        assert torch.allclose(sync.running_var, ref.running_var, atol=1e-12)
        assert sync.num_batches_tracked.item() == ref.num_batches_tracked.item()
        sync.zero_grad()
        ref.zero_grad()
    sync.eval()
    ref.eval()
    x = batch_of(rank, shape_tail, 9)[0]
    assert torch.allclose(sync(x), ref(x), atol=1e-12)


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check(rank, size, (3,), 0.1)         # (N, C)
    check(rank, size, (4, 5), None)      # (N, C, L), cumulative running averages
    check(rank, size, (2, 3, 2), 0.3)    # (N, C, H, W)
    assert hvd.SyncBatchNorm is __import__("kolo.torch").torch.SyncBatchNorm
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
