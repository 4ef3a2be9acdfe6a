"""Allreduce among ranks sharing one GPU (kolo/torch/shared_gpu.py), on every rank of the job.

argv[1]: "host" plays the protocol on host memory (KOLO_STAGE_THROUGH_HOST=shared, the test sets
it: mailboxes in /dev/shm, CPU tensors); "cuda" runs it on the one GPU every rank uses (device 0).
Checks: values of every reduction and dtype, in place and not; a batch larger than the mailboxes,
submitted and synchronized in a different order on each rank, over several steps (mailboxes are
reused, not exported again); a shape mismatch named on every rank, the job going on after it;
a peer whose copy never finishes (host only) named within the timeout; a process set without
rank 0; a grouped allreduce as one operation (mixed dtypes, an empty member, in place and not,
lists that differ named); DistributedOptimizer keeping the replicas equal, with groups too.
Prints "rank <rank> OK".
"""

import faulthandler
import os
import sys
import time

import torch

import horovod.torch as hvd
from kolo.exceptions import HorovodInternalError
from kolo.torch import gpu_path, shared_gpu, shared_gpu_session, staging

MODE = sys.argv[1]
DEVICE = torch.device("cuda", 0) if MODE == "cuda" else torch.device("cpu")
REDUCTIONS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max,
              "product": hvd.Product}


def session() -> shared_gpu.SharedGpu:
    (only,) = shared_gpu._sessions.values()
    return only


def check_values(rank: int, size: int) -> None:
    base = torch.arange(1, 7, dtype=torch.float64).reshape(2, 3)
    contributions = [base * (r + 1) - 2 * r for r in range(size)]
    for dtype in (torch.float32, torch.float64, torch.float16, torch.int32, torch.int64):
        stack = torch.stack([c.to(dtype) for c in contributions])
        want = {"sum": stack.sum(0), "min": stack.min(0).values, "max": stack.max(0).values,
                "product": stack.prod(0)}
        want["average"] = (stack.sum(0) / size if dtype.is_floating_point
                           else stack.sum(0).div(size, rounding_mode="trunc"))
        for label, op in REDUCTIONS.items():
            mine = contributions[rank].to(dtype).to(DEVICE).clone()
            kept = mine.clone()
            got = hvd.allreduce(mine, op=op, name=f"v.{label}.{dtype}")
            assert got is not mine and torch.equal(mine, kept), (label, dtype)  # input untouched
            assert got.dtype == dtype and torch.equal(got.cpu(), want[label].to(dtype)), (
                label, dtype, got, want[label])
            again = hvd.allreduce_(mine, op=op, name=f"v.inplace.{label}.{dtype}")
            assert again is mine and torch.equal(mine.cpu(), want[label].to(dtype)), (label, dtype)
    scalar = hvd.allreduce(torch.tensor(float(rank), device=DEVICE), op=hvd.Sum, name="scalar")
    assert scalar.shape == () and scalar.item() == sum(range(size)), scalar


def check_batches(rank: int, size: int) -> None:
    """Each step: 40 tensors of 3 KiB to 12 KiB (more than one 64 KiB mailbox), submitted in an
    order rotated by rank and synchronized backwards, as gradient hooks and step() may."""
    names = [f"grad.{i}" for i in range(40)]
    order = names[rank * 7 % len(names):] + names[:rank * 7 % len(names)]
    exported = []
    for step in range(6):
        handles = {}
        for name in order:
            i = int(name.split(".")[1])
            values = torch.full((768 * (1 + i % 4),), float(rank + i + step), device=DEVICE)
            handles[name] = (hvd.allreduce_async_(values, op=hvd.Sum, name=name), values, i)
        for name in reversed(order):
            handle, values, i = handles[name]
            assert hvd.synchronize(handle) is values
            want = float(sum(r + i + step for r in range(size)))
            assert torch.all(values == want).item(), (name, step, values[:3], want)
        exported.append(len(session()._mailboxes))
    # A step needs several mailboxes; later steps reuse them: a step's first submits may come
    # before the last step's releases completed, so up to two steps' worth are out, never more.
    assert exported[0] > 1 and exported[-1] <= 2 * exported[0] + 1, exported
    # Once every handshake of a step is done, its first synchronize() sums them all in one batch
    # (one list per dtype for torch's multi-tensor kernels); the others find their results.
    before = session().batches
    handles = [hvd.allreduce_async_(torch.full((100 + i,), float(rank + i), device=DEVICE,
                                               dtype=(torch.float32, torch.float16)[i % 2]),
                                    op=(hvd.Sum, hvd.Average)[i % 3 == 0], name=f"batched.{i}")
               for i in range(20)]
    while not all(hvd.poll(handle) for handle in handles):
        time.sleep(1e-3)
    for i, handle in enumerate(handles):
        total = float(sum(r + i for r in range(size)))
        want = total / size if i % 3 == 0 else total
        assert torch.all(hvd.synchronize(handle) == want).item(), (i, want)
    assert session().batches == before + 1, (before, session().batches)


def check_mismatch_is_named(rank: int, size: int) -> None:
    values = torch.ones(4 + (rank == 1), device=DEVICE)
    try:
        hvd.allreduce(values, name="bad.shape")
    except HorovodInternalError as error:
        others = "rank 0" if size == 2 else "rank 0 and rank 2"
        assert str(error) == (f"Mismatched shape for tensor 'allreduce.bad.shape': {others} "
                              f"submitted [4], rank 1 submitted [5]"), error
    else:
        raise AssertionError("a shape mismatch was accepted")
    got = hvd.allreduce(torch.ones(3, device=DEVICE), op=hvd.Sum, name="after.mismatch")
    assert torch.equal(got.cpu(), torch.full((3,), float(size)))
    if MODE == "host":
        # The handshake of a CUDA tensor is marked as one (a device, no event): here rank 0's
        # stands for a CUDA tensor, the others' are CPU ones.
        shared = session()
        shared.device = 0 if rank == 0 else -1
        try:
            hvd.allreduce(torch.ones(2), name="bad.device")
        except HorovodInternalError as error:
            assert ("Mismatched device for tensor 'allreduce.bad.device': rank 0 submitted "
                    "cuda") in str(error), error
        else:
            raise AssertionError("a device mismatch was accepted")
        finally:
            shared.device = -1
        # A name already in flight is refused on this rank at once (Horovod's ValueError).
        # Rank 0 keeps "twice" in flight while it tries: the others submit "twice" only after
        # "twice.held", which rank 0 joins after its second try (without that order the first
        # "twice" may already have finished on every rank, and a second submission would
        # rightly be accepted: CI saw it once).
        if rank == 0:
            first = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="twice")
            try:
                hvd.allreduce_async(torch.ones(2), name="twice")
            except ValueError as error:
                assert "'allreduce.twice'" in str(error), error
            else:
                raise AssertionError("a duplicate name was accepted")
            hvd.allreduce(torch.ones(1), name="twice.held")
        else:
            hvd.allreduce(torch.ones(1), name="twice.held")
            first = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="twice")
        assert torch.equal(hvd.synchronize(first), torch.full((2,), float(size)))
        # A failed or refused handshake counts as done: the rank's low mark passes it (else no
        # peer could ever reuse a mailbox again).
        marks = shared._marks[0]
        assert marks.low == marks.next and not marks.above, (marks.low, marks.next)


def check_a_stuck_peer_is_named(rank: int, size: int) -> None:
    """The host stand-in's events have always fired: here the peers' ready events never do."""
    calls = session().calls
    fired, timeout = calls.fired, shared_gpu_session._peer_timeout_s
    calls.fired = lambda event: False
    shared_gpu_session._peer_timeout_s = lambda: 0.5
    try:
        hvd.allreduce(torch.ones(2), name="stuck.peer")
    except HorovodInternalError as error:
        peer = 1 if rank == 0 else 0
        assert f"tensor 'allreduce.stuck.peer': the copy of rank {peer}" in str(error), error
        assert "within 0 s" in str(error) or "within 1 s" in str(error), error
    else:
        raise AssertionError("a peer whose copy never ran was not reported")
    finally:
        calls.fired, shared_gpu_session._peer_timeout_s = fired, timeout
    got = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after.stuck")
    assert torch.equal(got, torch.full((2,), float(size)))


def check_process_set_and_group(rank: int, size: int) -> None:
    members = list(range(1, size))
    subset = hvd.add_process_set(members)
    if rank in members:
        got = hvd.allreduce(torch.full((5,), float(rank), device=DEVICE), op=hvd.Sum,
                            name="subset", process_set=subset)
        assert torch.equal(got.cpu(), torch.full((5,), float(sum(members)))), got
    else:  # refused on this rank alone, in the core's words, before anything is placed
        try:
            hvd.allreduce(torch.ones(2, device=DEVICE), name="not.mine", process_set=subset)
        except ValueError as error:
            assert str(error) == (f"rank 0 is not a member of process set {subset.process_set_id} "
                                  f"(ranks {members}): tensor 'allreduce.not.mine' cannot be "
                                  f"submitted on it from this rank"), error
        else:
            raise AssertionError("a rank outside the set submitted on it")
    hvd.remove_process_set(subset)
    # The set again (its id may come back): its numbers start anew, and a mailbox written over
    # and over by it (20 KiB each in 64 KiB mailboxes) still gives every sum right.
    again = hvd.add_process_set(members)
    if rank in members:
        for k in range(12):
            got = hvd.allreduce(torch.full((5120,), float(rank + k), device=DEVICE), op=hvd.Sum,
                                name=f"subset.again.{k}", process_set=again)
            assert torch.all(got == float(sum(r + k for r in members))).item(), (k, got[:3])
    hvd.remove_process_set(again)
    tensors = [torch.full((k + 1,), float(rank * k), device=DEVICE) for k in range(3)]
    got = hvd.grouped_allreduce(tensors, op=hvd.Sum, name="grouped")
    for k, result in enumerate(got):
        assert torch.equal(result.cpu(), torch.full((k + 1,), float(k * sum(range(size)))))


def shared_operations() -> int:
    """How many operations (handshakes) this rank ran on the shared path in the global set."""
    return session()._marks[0].next


def check_grouped(rank: int, size: int) -> None:
    """A grouped allreduce is one operation on this path: one region, one handshake."""
    kinds = ((torch.float32, (3, 2)), (torch.float16, (5,)), (torch.float32, (0,)),
             (torch.int64, (4,)), (torch.float64, ()))
    tensors = [torch.full(shape, rank + k, dtype=dtype, device=DEVICE)
               for k, (dtype, shape) in enumerate(kinds)]
    before = shared_operations()
    got = hvd.grouped_allreduce(tensors, op=hvd.Sum, name="group.mixed")
    assert shared_operations() == before + 1, (before, shared_operations())
    for k, ((dtype, shape), result) in enumerate(zip(kinds, got)):
        want = torch.full(shape, sum(r + k for r in range(size)), dtype=dtype)
        assert result.dtype == dtype and torch.equal(result.cpu(), want), (k, result, want)
        assert torch.equal(tensors[k].cpu(), torch.full(shape, rank + k, dtype=dtype)), k
    inplace = [torch.full((7 + k,), float(rank * (k + 1)), device=DEVICE) for k in range(3)]
    handle = hvd.grouped_allreduce_async_(inplace, op=hvd.Average, name="group.inplace")
    results = hvd.synchronize(handle)
    assert all(a is b for a, b in zip(results, inplace)), "in place returns the caller's"
    for k, result in enumerate(inplace):
        want = sum(r * (k + 1) for r in range(size)) / size
        assert torch.allclose(result.cpu(), torch.full((7 + k,), want)), (k, result)
    # Lists that differ: named on every rank, the job going on after it.
    others = "rank 0" if size == 2 else "rank 0 and rank 2"
    lists = {"bad.count": [torch.ones(2, device=DEVICE)] * (2 + (rank == 1)),
             "bad.shapes": [torch.ones(2, device=DEVICE), torch.ones(3 + (rank == 1),
                                                                     device=DEVICE)]}
    for name, group in lists.items():
        try:
            hvd.grouped_allreduce(group, name=name)
        except HorovodInternalError as error:
            text = str(error)
            if name == "bad.count":
                assert text == (f"Mismatched number of tensors for tensor "
                                f"'grouped_allreduce.{name}': {others} submitted 2, rank 1 "
                                f"submitted 3"), text
            else:
                assert text.startswith(f"Mismatched dtypes and shapes for tensor "
                                       f"'grouped_allreduce.{name}': {others} submitted list "
                                       ), text
                assert ", rank 1 submitted list " in text, text
                mine = "float32 [2], float32 [4]" if rank == 1 else "float32 [2], float32 [3]"
                assert text.endswith(f"; rank {rank} submitted {mine}"), text
        else:
            raise AssertionError(f"{name}: differing lists were accepted")
    got = hvd.grouped_allreduce([torch.ones(2, device=DEVICE)] * 2, op=hvd.Sum, name="group.ok")
    assert all(torch.equal(g.cpu(), torch.full((2,), float(size))) for g in got), got


def check_optimizer(rank: int, size: int) -> None:
    """Replicas stay equal, and the gradients' operations per step are what the grouping says:
    without groups, one per gradient at the first step, then one per bucket (here one: the four
    gradients fit in 25 MB); with groups=2, two; with buckets turned off, four."""
    trained = []
    for groups, bucket_mb, later in ((None, "", 1), (2, "", 2), (None, "0", 4)):
        os.environ["KOLO_SHARED_GPU_BUCKET_MB"] = bucket_mb
        counts, flat = check_optimizer_keeps_replicas_equal(rank, groups)
        assert counts[0] >= (groups or 4) and counts[1:] == [later] * 3, (groups, counts)
        trained.append(flat)
    del os.environ["KOLO_SHARED_GPU_BUCKET_MB"]
    # However grouped, every gradient is summed by the same kernels: the same bits.
    assert all(torch.equal(trained[0], other) for other in trained[1:]), "grouping changed bits"


def check_optimizer_keeps_replicas_equal(rank: int, groups) -> tuple:
    """Four steps of a small model: the number of shared operations each step ran, and the
    trained parameters."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 1)).to(DEVICE)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         groups=groups)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    generator = torch.Generator().manual_seed(rank)
    counts = []
    for _ in range(4):
        inputs = torch.randn(32, 8, generator=generator).to(DEVICE)
        optimizer.zero_grad()
        before = shared_operations()
        model(inputs).pow(2).mean().backward()
        optimizer.step()
        counts.append(shared_operations() - before)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    everyone = hvd.allgather(flat.unsqueeze(0), name=f"replicas.{groups}.{len(counts)}")
    assert all(torch.equal(everyone[0], row) for row in everyone), "replicas differ"
    return counts, flat


def main() -> None:
    if os.environ.get("WORKER_STACKS_AFTER_S"):  # a check on a lent GPU: where a hang waits
        faulthandler.dump_traceback_later(float(os.environ["WORKER_STACKS_AFTER_S"]))
    os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
    shared_gpu_session.MAILBOX_BYTES = 64 << 10  # small mailboxes: the batches below need several
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if MODE == "cuda":
        torch.cuda.set_device(0)
        assert staging.path_for("cuda", 0) == gpu_path.SHARED_GPU, staging._choices
    check_values(rank, size)
    check_batches(rank, size)
    check_mismatch_is_named(rank, size)
    if MODE == "host":
        check_a_stuck_peer_is_named(rank, size)
    check_process_set_and_group(rank, size)
    check_grouped(rank, size)
    check_optimizer(rank, size)
    hvd.shutdown()
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main()
