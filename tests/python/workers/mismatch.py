"""Ranks disagree about a tensor: every rank gets an error naming the tensor, the ranks and the
values, and other tensors (submitted at the same time) are unaffected."""

import sys

import numpy as np

import kolo


def expect_error(handle, *fragments):
    try:
        kolo.synchronize(handle)
    except kolo.KoloError as error:
        assert isinstance(error, RuntimeError), type(error)  # Horovod's HorovodInternalError
        text = str(error)
        for fragment in fragments:
            assert fragment in text, f"{fragment!r} not in {text!r}"
        return text
    raise AssertionError(f"no error; expected one mentioning {fragments}")


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    last = size - 1

    # dtype: the last rank submits float64, the others float32; a good tensor rides along.
    dtype = np.float64 if rank == last else np.float32
    bad = kolo.allreduce_async(np.ones(4, dtype), name="grad.dtype")
    good = kolo.allreduce_async(np.full(4, rank, np.float32), op=kolo.Sum, name="grad.good")
    expect_error(bad, "grad.dtype", "float32", "float64", f"rank {last}")
    assert np.all(kolo.synchronize(good) == sum(range(size)))

    # shape
    shape = (5,) if rank == 0 else (4,)
    expect_error(kolo.allreduce_async(np.ones(shape, np.float32), name="grad.shape"),
                 "grad.shape", "rank 0")

    # reduction op
    op = kolo.Max if rank == 0 else kolo.Sum
    expect_error(kolo.allreduce_async(np.ones(3, np.float32), op=op, name="grad.op"), "grad.op")

    # broadcast root
    root = 1 if rank == 0 else 0
    expect_error(kolo.broadcast_async(np.ones(3, np.float32), root_rank=root, name="bcast.root"),
                 "bcast.root", "root")

    # allgather: trailing dimensions must match
    cols = 3 if rank == 0 else 2
    expect_error(kolo.allgather_async(np.ones((2, cols), np.float32), name="gather.cols"),
                 "gather.cols")

    # collective kind
    if rank == 0:
        handle = kolo.broadcast_async(np.ones(3, np.float32), root_rank=0, name="kind")
    else:
        handle = kolo.allreduce_async(np.ones(3, np.float32), name="kind")
    expect_error(handle, "kind")

    # Everything still works afterwards.
    assert np.all(kolo.allreduce(np.ones(3, np.float32), op=kolo.Sum, name="after") == size)

    # Submitting a name that is still in flight is refused at once on this rank, with a
    # ValueError as in Horovod (a bad argument, not a failure between ranks). Rank 0 keeps
    # "twice" in flight while it tries: the other ranks submit "twice" only after "held", which
    # rank 0 joins after its second try (without that order the first "twice" may already have
    # finished on every rank, and the second submission would rightly be accepted).
    if rank == 0:
        handle = kolo.allreduce_async(np.ones(3, np.float32), op=kolo.Sum, name="twice")
        try:
            kolo.allreduce_async(np.ones(3, np.float32), name="twice")
            raise AssertionError("duplicate name accepted")
        except ValueError as error:
            assert isinstance(error, kolo.KoloValueError), type(error)
            assert "twice" in str(error) and "in flight" in str(error), error
        kolo.allreduce(np.ones(1, np.float32), name="held")
    else:
        kolo.allreduce(np.ones(1, np.float32), name="held")
        handle = kolo.allreduce_async(np.ones(3, np.float32), op=kolo.Sum, name="twice")
    assert np.all(kolo.synchronize(handle) == size)

    kolo.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
