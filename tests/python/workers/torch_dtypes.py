"""bfloat16 and float16 through PyTorch tensors (NumPy has no bfloat16): kolo takes any DLPack
tensor, and 16-bit floats accumulate with round-to-nearest-even, not truncation."""

import torch

import kolo


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.int32):
        for count in (0, 1, 5, 4099, 200003):
            x = (torch.arange(count) % 7 + rank).to(dtype)
            got = kolo.allreduce(x, op=kolo.Sum, name=f"t.{dtype}.{count}")
            assert isinstance(got, torch.Tensor) and got.dtype == dtype and got.shape == x.shape
            want = sum((torch.arange(count) % 7 + r).to(torch.float64) for r in range(size))
            assert torch.equal(got.to(torch.float64), want), (dtype, count)
            gathered = kolo.allgather(x[: rank + 1].reshape(-1, 1).contiguous(),
                                      name=f"g.{dtype}.{count}")
            assert isinstance(gathered, torch.Tensor) and gathered.dtype == dtype
            assert gathered.shape[0] == sum(min(r + 1, count) for r in range(size))
    # Rounding: rank 0 gives 1 + 2**-7, rank 1 gives 1 + 2**-6 (both exact in bfloat16), others 0.
    # The exact sum 2 + 3 * 2**-7 lies halfway between two bfloat16 values; round-to-nearest-even
    # gives 2.03125, a truncating cast would give 2.015625.
    value = {0: 1.0 + 2.0 ** -7, 1: 1.0 + 2.0 ** -6}.get(rank, 0.0)
    got = kolo.allreduce(torch.full((1000,), value, dtype=torch.bfloat16), op=kolo.Sum,
                         name="bf16.round")
    assert torch.all(got.to(torch.float64) == 2.03125), got[:3]
    avg = kolo.allreduce(torch.full((3,), float(rank), dtype=torch.bfloat16), name="bf16.avg")
    assert torch.allclose(avg.float(), torch.full((3,), (size - 1) / 2.0)), avg
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
