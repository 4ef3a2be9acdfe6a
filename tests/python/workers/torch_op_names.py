"""horovod.torch names a named operation "<kind>.<name>", as Horovod's torch extension does: one
user name may be in flight in an allreduce, an allgather, a broadcast, an alltoall, a
reducescatter and a grouped allreduce at once, while the same kind twice is refused, naming the
operation as the timeline shows it (test_torch_op_names.py reads the timeline).

The last rank submits late, so on the others every operation is still in flight when the next
one is submitted.
"""

import sys
import time

import torch

import horovod.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
late = rank == size - 1
if late:
    time.sleep(0.5)

mine = torch.full((size, 2), float(rank + 1))
handles = {
    "allreduce": hvd.allreduce_async(mine, name="metric", op=hvd.Sum),
    "allgather": hvd.allgather_async(mine, name="metric"),
    "broadcast": hvd.broadcast_async(mine, root_rank=0, name="metric"),
    "alltoall": hvd.alltoall_async(mine, name="metric"),
    "reducescatter": hvd.reducescatter_async(mine, name="metric", op=hvd.Sum),
    "grouped_allreduce": hvd.grouped_allreduce_async([mine, mine], name="metric", op=hvd.Sum),
}
if not late:
    try:
        hvd.allreduce_async(mine, name="metric")
    except ValueError as error:
        assert "'allreduce.metric' is already in flight" in str(error), error
    else:
        raise AssertionError("a second allreduce named 'metric' in flight was accepted")

total = sum(range(1, size + 1))
results = {kind: hvd.synchronize(handle) for kind, handle in handles.items()}
assert torch.equal(results["allreduce"], torch.full((size, 2), float(total))), results
assert torch.equal(results["allgather"],
                   torch.cat([torch.full((size, 2), float(r + 1)) for r in range(size)]))
assert torch.equal(results["broadcast"], torch.full((size, 2), 1.0)), results
received, _ = results["alltoall"]
assert torch.equal(received, torch.tensor([[float(r + 1)] * 2 for r in range(size)])), received
assert torch.equal(results["reducescatter"], torch.full((1, 2), float(total))), results
assert all(torch.equal(t, torch.full((size, 2), float(total)))
           for t in results["grouped_allreduce"]), results
hvd.shutdown()
print(f"rank {rank} OK", flush=True)
sys.exit(0)
