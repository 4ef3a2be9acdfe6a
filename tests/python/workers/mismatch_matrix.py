"""Every op kind x every kind of disagreement between ranks: each rank gets an error of the class
Horovod's users catch, naming the tensor and the rank that differed, and none waits forever.

The last rank ("the odd rank") is the one that differs. Disagreements the coordinator sees
(shape, dtype, root, reduction op) fail the name on every rank as HorovodInternalError (a
RuntimeError). A bad argument the odd rank can see alone (splits of the wrong length or dtype, a
reduction reducescatter lacks) raises on its own thread at once (ValueError, or
HorovodInternalError for the op, as Horovod) and still fails the name on the others. A collective
that some ranks never submit (the odd rank calls another one instead, or calls it on another
process set) is a stall: the job runs with a short HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, after which
every pending name fails on the ranks that submitted it, naming the missing ranks.

Prints the number of cases checked and "rank R OK" when every case behaved.
"""

import sys

import torch

import horovod.torch as hvd

INTERNAL = hvd.HorovodInternalError


class Case:
    """One cell of the matrix: `run(odd)` performs this rank's part (odd: this is the odd rank);
    the odd rank expects `odd_error`, the others `others_error`; every message names the tensor
    (the case's label) and each fragment."""

    def __init__(self, label, run, odd_error=INTERNAL, others_error=INTERNAL, fragments=()):
        self.label, self.run = label, run
        self.odd_error, self.others_error, self.fragments = odd_error, others_error, fragments


def ones(n, dtype=torch.float32):
    return torch.ones(n, dtype=dtype)


def cases(size, odd, subset):
    """The matrix. `subset`: a process set of the odd rank and rank 0 (None below 3 ranks, where
    the only smaller sets have one member and complete alone)."""
    rows = size * 2  # divisible for alltoall and reducescatter
    out = []

    def add(label, run, **kw):
        out.append(Case(label, run, **kw))

    def shape_of(is_odd):
        return (rows + size, 3) if is_odd else (rows, 3)

    def trailing_of(is_odd):
        return (rows, 4) if is_odd else (rows, 3)

    def dtype_of(is_odd):
        return torch.float64 if is_odd else torch.float32

    oddr = f"rank {odd}"
    # ---- allreduce, grouped allreduce
    add("mm.allreduce.shape", lambda o, n: hvd.allreduce(torch.ones(shape_of(o)), name=n),
        fragments=(oddr, "shape"))
    add("mm.allreduce.dtype", lambda o, n: hvd.allreduce(ones(4, dtype_of(o)), name=n),
        fragments=(oddr, "dtype", "float64"))
    add("mm.allreduce.op", lambda o, n: hvd.allreduce(ones(4), name=n,
                                                      op=hvd.Max if o else hvd.Sum),
        fragments=(oddr, "reduce op"))
    def cached_then_strided(o, n):
        # A cached name submitted in place on a non-contiguous view by the odd rank: refused
        # there, and never answered from the cache (it carries no data).
        for _ in range(2):
            hvd.allreduce_(torch.ones(4), name=n)
        hvd.allreduce_(torch.ones(4, 2)[:, 0] if o else torch.ones(4), name=n)
    add("mm.allreduce.strided_after_cached_rounds", cached_then_strided, odd_error=ValueError,
        fragments=(oddr, "contiguous"))
    add("mm.grouped_allreduce.shape", lambda o, n: hvd.grouped_allreduce(
        [ones(2), torch.ones(shape_of(o))], name=n), fragments=(oddr, "shape"))
    add("mm.grouped_allreduce.dtype", lambda o, n: hvd.grouped_allreduce(
        [ones(2), ones(3, dtype_of(o))], name=n), fragments=(oddr, "dtype"))
    add("mm.grouped_allreduce.op", lambda o, n: hvd.grouped_allreduce(
        [ones(2), ones(3)], name=n, op=hvd.Min if o else hvd.Sum), fragments=(oddr, "reduce op"))
    # ---- allgather, grouped allgather (the first dimension may differ, the others may not)
    add("mm.allgather.shape", lambda o, n: hvd.allgather(torch.ones(trailing_of(o)), name=n),
        fragments=(oddr, "shape"))
    add("mm.allgather.dtype", lambda o, n: hvd.allgather(ones(4, dtype_of(o)), name=n),
        fragments=(oddr, "dtype"))
    add("mm.grouped_allgather.shape", lambda o, n: hvd.grouped_allgather(
        [ones(2), torch.ones(trailing_of(o))], name=n), fragments=(oddr, "shape"))
    add("mm.grouped_allgather.dtype", lambda o, n: hvd.grouped_allgather(
        [ones(2), ones(3, dtype_of(o))], name=n), fragments=(oddr, "dtype"))
    # ---- broadcast
    add("mm.broadcast.shape", lambda o, n: hvd.broadcast(torch.ones(shape_of(o)), 0, name=n),
        fragments=(oddr, "shape"))
    add("mm.broadcast.dtype", lambda o, n: hvd.broadcast(ones(4, dtype_of(o)), 0, name=n),
        fragments=(oddr, "dtype"))
    add("mm.broadcast.root", lambda o, n: hvd.broadcast(ones(4), odd if o else 0, name=n),
        fragments=(oddr, "root"))
    # ---- alltoall
    add("mm.alltoall.shape", lambda o, n: hvd.alltoall(torch.ones(trailing_of(o)), name=n),
        fragments=(oddr, "shape"))
    add("mm.alltoall.dtype", lambda o, n: hvd.alltoall(torch.ones(rows, dtype=dtype_of(o)),
                                                       name=n), fragments=(oddr, "dtype"))
    add("mm.alltoall.splits_length", lambda o, n: hvd.alltoall(
        ones(rows), torch.tensor([2] * size + ([0] if o else []), dtype=torch.int32), name=n),
        odd_error=ValueError, fragments=(oddr, "splits"))
    def cached_then_bad(o, n):
        # The name's response is cached after a good round: the bad round must still reach the
        # coordinator (a cache hit would run it without data).
        good = torch.full((size,), 2, dtype=torch.int32)
        for _ in range(2):
            hvd.alltoall(ones(rows), good, name=n)
        hvd.alltoall(ones(rows), good.float() if o else good, name=n)
    add("mm.alltoall.splits_dtype_after_cached_rounds", cached_then_bad, odd_error=ValueError,
        fragments=(oddr, "splits"))
    add("mm.alltoall.splits_dtype", lambda o, n: hvd.alltoall(
        ones(rows), torch.full((size,), 2, dtype=torch.float32 if o else torch.int32), name=n),
        odd_error=ValueError, fragments=(oddr, "splits"))
    # ---- reducescatter, grouped reducescatter
    add("mm.reducescatter.shape", lambda o, n: hvd.reducescatter(torch.ones(shape_of(o)), name=n),
        fragments=(oddr, "shape"))
    add("mm.reducescatter.dtype", lambda o, n: hvd.reducescatter(
        torch.ones(rows, dtype=dtype_of(o)), name=n), fragments=(oddr, "dtype"))
    add("mm.reducescatter.op", lambda o, n: hvd.reducescatter(
        ones(rows), name=n, op=hvd.Adasum if o else hvd.Sum), fragments=(oddr, "reducescatter"))
    add("mm.grouped_reducescatter.shape", lambda o, n: hvd.grouped_reducescatter(
        [ones(rows), torch.ones(shape_of(o))], name=n), fragments=(oddr, "shape"))
    add("mm.grouped_reducescatter.dtype", lambda o, n: hvd.grouped_reducescatter(
        [ones(rows), ones(rows, dtype_of(o))], name=n), fragments=(oddr, "dtype"))
    add("mm.grouped_reducescatter.op", lambda o, n: hvd.grouped_reducescatter(
        [ones(rows), ones(rows)], name=n, op=hvd.Adasum if o else hvd.Average),
        fragments=(oddr, "reducescatter"))

    # ---- one rank not calling: the odd rank calls another collective instead (the usual way a
    # script deadlocks: one rank took another branch), so both wait until the stall shutdown.
    calls = {
        "allreduce": lambda n, ps: hvd.allreduce(ones(4), name=n, process_set=ps),
        "grouped_allreduce": lambda n, ps: hvd.grouped_allreduce([ones(2), ones(3)], name=n,
                                                                 process_set=ps),
        "allgather": lambda n, ps: hvd.allgather(ones(4), name=n, process_set=ps),
        "grouped_allgather": lambda n, ps: hvd.grouped_allgather([ones(2), ones(3)], name=n,
                                                                 process_set=ps),
        "broadcast": lambda n, ps: hvd.broadcast(ones(4), 0, name=n, process_set=ps),
        "alltoall": lambda n, ps: hvd.alltoall(ones(rows), name=n, process_set=ps),
        "reducescatter": lambda n, ps: hvd.reducescatter(ones(rows), name=n, process_set=ps),
        "grouped_reducescatter": lambda n, ps: hvd.grouped_reducescatter(
            [ones(rows), ones(rows)], name=n, process_set=ps),
        # barrier takes no name; it goes last in each group of cases (see main) so that the
        # unnamed-op counters, which differ once one rank skipped a barrier, are not used again.
        "barrier": lambda n, ps: hvd.barrier(process_set=ps),
    }
    for kind, call in calls.items():
        def skip(o, n, call=call):
            if o:
                hvd.allreduce(ones(1), name=n + ".instead")  # never submitted by the others
            else:
                call(n, hvd.global_process_set)
        add(f"mm.{kind}.not_called", skip,
            fragments=("Stall shutdown",) if kind == "barrier" else ("Stall shutdown", "mm."))

    # ---- process set: the odd rank and rank 0 submit the name on `subset`, the others on the
    # global set: each set waits for ranks that submitted it elsewhere.
    if subset is not None:
        for kind, call in calls.items():
            def on_sets(o, n, call=call):
                call(n, subset if o else hvd.global_process_set)
            add(f"mm.{kind}.process_set", on_sets, fragments=("Stall shutdown",))
    return out


def check(case, rank, odd):
    expected = case.odd_error if rank == odd else case.others_error
    try:
        case.run(rank == odd, case.label)
    except Exception as error:  # noqa: BLE001 - the class is what is checked
        text = str(error)
        assert isinstance(error, expected), (
            f"{case.label}: rank {rank} raised {type(error).__name__}, expected "
            f"{expected.__name__}: {text}")
        if expected is INTERNAL:
            assert isinstance(error, RuntimeError), case.label
        # A barrier has no name of its own: the ranks that called it see barrier.noname.N.
        unnamed = case.label.startswith("mm.barrier.")
        for fragment in ((() if unnamed else (case.label,)) + tuple(case.fragments)):
            assert fragment in text, f"{case.label}: rank {rank}: {fragment!r} not in {text!r}"
        return
    raise AssertionError(f"{case.label}: rank {rank} got no error")


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    odd = size - 1
    subset = hvd.add_process_set([0, odd]) if size >= 3 else None
    matrix = cases(size, odd, subset)
    for case in matrix:
        check(case, rank, odd)
    # Nothing is left behind: the ranks still agree on a fresh collective.
    assert hvd.allreduce(ones(2), op=hvd.Sum, name="mm.after").tolist() == [size, size]
    print(f"rank {rank}: {len(matrix)} cases checked")
    print(f"rank {rank} OK")
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
