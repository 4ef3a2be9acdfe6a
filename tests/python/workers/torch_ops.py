"""alltoall, reducescatter and the grouped operations of horovod.torch on kolo: values against
what each rank can compute alone, autograd, and clear errors for bad splits and mismatches."""

import sys

import torch

import horovod.torch as hvd


def rows_of(src: int, dst: int) -> int:
    """Rows rank `src` sends rank `dst` in the uneven test: some pairs send nothing."""
    return (src + 2 * dst) % 3


def payload(src: int, size: int) -> torch.Tensor:
    """Rank src's alltoall input: row i of the block for dst holds (src, dst, i)."""
    rows = []
    for dst in range(size):
        for i in range(rows_of(src, dst)):
            rows.append([src, dst, i])
    return torch.tensor(rows, dtype=torch.float32).reshape(-1, 3)


def check_alltoall(rank: int, size: int) -> None:
    splits = torch.tensor([rows_of(rank, d) for d in range(size)], dtype=torch.int32)
    out, received = hvd.alltoall(payload(rank, size), splits=splits, name="a2a.uneven")
    expected = torch.cat([payload(src, size)[sum(rows_of(src, d) for d in range(rank)):]
                          [:rows_of(src, rank)] for src in range(size)])
    assert torch.equal(out, expected), (out, expected)
    assert received.dtype == torch.int32
    assert received.tolist() == [rows_of(src, rank) for src in range(size)], received
    # Without splits: the first dimension divided evenly, only the tensor returned.
    x = torch.arange(2 * size * 2, dtype=torch.int64).reshape(2 * size, 2) + 100 * rank
    even = hvd.alltoall(x)
    assert torch.equal(even, torch.cat([(torch.arange(2 * size * 2).reshape(2 * size, 2)
                                         + 100 * src)[2 * rank:2 * rank + 2]
                                        for src in range(size)]))
    # async form: synchronize gives (output, received_splits) as Horovod's
    handle = hvd.alltoall_async(x, splits=[2] * size, name="a2a.async")
    out2, rec2 = hvd.synchronize(handle)
    assert torch.equal(out2, even) and rec2.tolist() == [2] * size
    # Autograd: the gradient goes back to where each row came from.
    source = payload(rank, size).requires_grad_()
    out, _ = hvd.alltoall(source, splits=splits, name="a2a.grad")
    (out * (out[:, 0:1].detach() + 1)).sum().backward()  # d/d row: its source rank + 1
    assert torch.equal(source.grad, torch.full_like(source, float(rank + 1))), source.grad


def expect_error(fn, *fragments, kind=hvd.HorovodInternalError) -> str:
    try:
        fn()
    except kind as error:
        for fragment in fragments:
            assert fragment in str(error), (fragment, str(error))
        return str(error)
    raise AssertionError(f"no error; expected {fragments}")


def check_alltoall_errors(rank: int, size: int) -> None:
    x = torch.zeros(size, 2)
    bad_length = [1] * size if rank != 1 else [1] * (size + 1)
    # The rank with bad splits gets a ValueError at once (as Horovod); the others the same
    # message as a HorovodInternalError instead of waiting for it.
    expect_error(lambda: hvd.alltoall(x, splits=bad_length, name="a2a.badlen"),
                 "a2a.badlen", "rank 1", "entries",
                 kind=ValueError if rank == 1 else hvd.HorovodInternalError)
    bad_sum = [1] * size if rank != 0 else [size] + [1] * (size - 1)
    expect_error(lambda: hvd.alltoall(x, splits=bad_sum, name="a2a.badsum"),
                 "a2a.badsum", "rank 0", f"sums to {2 * size - 1}",
                 kind=ValueError if rank == 0 else hvd.HorovodInternalError)
    odd = torch.zeros(size + 1, 2)
    expect_error(lambda: hvd.alltoall(odd, name="a2a.uneven_nosplit"), "a2a.uneven_nosplit",
                 "divide evenly", kind=ValueError)
    other = torch.zeros(size, 3 if rank == 0 else 2)
    expect_error(lambda: hvd.alltoall(other, name="a2a.shape"), "a2a.shape",
                 "all dimensions but the first")
    try:
        hvd.alltoall(x, splits=[-1] + [1] * size, name="a2a.negative")
        raise AssertionError("negative splits accepted")
    except (hvd.HorovodInternalError, ValueError) as error:
        assert "negative" in str(error)
    # The job is still healthy afterwards.
    assert torch.equal(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(size)))


def horovod_rows(rows: int, size: int, rank: int) -> slice:
    """Horovod's reducescatter split of the first dimension: the first rows % size ranks get
    one row more."""
    base, extra = divmod(rows, size)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (1 if rank < extra else 0))


def check_reducescatter(rank: int, size: int) -> None:
    rows = 2 * size + 1
    def data(r):
        return torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) * (r + 1)
    total = sum(data(r) for r in range(size))
    mine = horovod_rows(rows, size, rank)
    out = hvd.reducescatter(data(rank), op=hvd.Sum, name="rs.sum")
    assert torch.equal(out, total[mine]), (out, total[mine])
    avg = hvd.reducescatter(data(rank), name="rs.avg")
    assert torch.allclose(avg, total[mine] / size)
    scaled = hvd.reducescatter(data(rank), op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
    assert torch.allclose(scaled, total[mine] * 2.0)
    ints = hvd.reducescatter(torch.full((size + 1, 2), rank + 1, dtype=torch.int32), op=hvd.Sum)
    assert ints.shape == (len(range(size + 1)[horovod_rows(size + 1, size, rank)]), 2)
    assert torch.all(ints == size * (size + 1) // 2)
    h = hvd.reducescatter_async(data(rank), op=hvd.Sum, name="rs.async")
    assert torch.equal(hvd.synchronize(h), total[mine])
    # Fewer rows than ranks: the last ranks get none.
    small = hvd.reducescatter(torch.ones(1, 2), op=hvd.Sum, name="rs.small")
    assert small.shape == ((1, 2) if rank == 0 else (0, 2)), small.shape
    # Autograd, as Horovod's: the allgather of the output gradients, times size for Sum.
    for op, factor in ((hvd.Sum, float(size)), (hvd.Average, 1.0)):
        x = data(rank).requires_grad_()
        y = hvd.reducescatter(x, op=op, name=f"rs.grad.{op}")
        weights = torch.arange(rows, dtype=torch.float32).unsqueeze(1).expand(rows, 3)
        (y * weights[mine]).sum().backward()
        assert torch.allclose(x.grad, weights * factor), x.grad
    expect_error(lambda: hvd.reducescatter(torch.ones(size + rank, 2), name="rs.mismatch"),
                 "rs.mismatch", "shape")
    try:
        hvd.reducescatter(torch.ones(2), op=hvd.Max)
        raise AssertionError("reducescatter with Max accepted")
    except hvd.HorovodInternalError as error:  # Horovod aborts the enqueue: a RuntimeError
        assert "supports Average and Sum only" in str(error), error


def check_grouped(rank: int, size: int) -> None:
    a = torch.full((3,), float(rank))
    b = torch.arange(2 * size + 1, dtype=torch.float64).reshape(-1, 1) * (rank + 1)
    gathered = hvd.grouped_allgather([a.reshape(1, 3), torch.full((rank + 1, 2), rank)])
    assert torch.equal(gathered[0], torch.arange(size, dtype=torch.float32)
                       .unsqueeze(1).expand(size, 3))
    assert gathered[1].shape == (size * (size + 1) // 2, 2)
    scattered = hvd.grouped_reducescatter([b, b * 2], op=hvd.Sum, name="grs")
    total = sum(range(1, size + 1))
    mine = horovod_rows(2 * size + 1, size, rank)
    expected = torch.arange(2 * size + 1, dtype=torch.float64).reshape(-1, 1)[mine] * total
    assert torch.equal(scattered[0], expected) and torch.equal(scattered[1], 2 * expected)
    # Mixed dtypes in one group: released together, one fused unit per dtype.
    mixed = hvd.grouped_allreduce([torch.ones(4), torch.ones(2, dtype=torch.float64),
                                   torch.ones(5)], op=hvd.Sum, name="mixed")
    assert [t.dtype for t in mixed] == [torch.float32, torch.float64, torch.float32]
    assert all(torch.all(t == size) for t in mixed)
    # A group with one bad member fails as a whole, on every rank, naming the culprit.
    bad = torch.ones(3 if rank == 0 else 4)
    handle = hvd.grouped_allreduce_async([torch.ones(2), bad], name="grp.bad")
    message = expect_error(lambda: hvd.synchronize(handle), "grp.bad.1", "shape")
    assert "grp.bad" in message
    # grouped allgather's gradient: this rank's slice of the averaged gradient, per member.
    x = torch.full((rank + 1, 2), 1.0, requires_grad=True)
    z = torch.ones(1, 1, requires_grad=True)
    gx, gz = hvd.grouped_allgather([x, z])
    (gx.sum() * 3 + gz.sum()).backward()
    assert torch.allclose(x.grad, torch.full_like(x, 3.0)) and torch.allclose(z.grad, z * 1.0)
    hvd.barrier()


def check_fp16_and_predivide(rank: int, size: int) -> None:
    x = torch.tensor([0.5, 1.25, -2.0], dtype=torch.float32) * (rank + 1)
    out = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16, name="fp16.values")
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.tensor([0.5, 1.25, -2.0]) * (size * (size + 1) / 2))
    # The wire dtype really is float16: a rank sending float16 itself matches the compressed ones.
    if rank == 0:
        mixed = hvd.allreduce(torch.ones(2, dtype=torch.float16), op=hvd.Sum, name="fp16.wire")
    else:
        mixed = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="fp16.wire",
                              compression=hvd.Compression.fp16)
    assert torch.equal(mixed.float(), torch.full((2,), float(size)))
    # gradient_predivide_factor: prescale 1/f, postscale f/size around the sum.
    g = torch.tensor([6.0, -3.0]) * (rank + 1)
    avg = hvd.allreduce(g, prescale_factor=1 / 4.0, postscale_factor=4.0, name="predivide")
    assert torch.allclose(avg, torch.tensor([6.0, -3.0]) * (size + 1) / 2)


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check_alltoall(rank, size)
    check_alltoall_errors(rank, size)
    check_reducescatter(rank, size)
    check_grouped(rank, size)
    check_fp16_and_predivide(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
