"""Which path the torch front end takes per op on CUDA tensors, and whether each result is right
(scripts/device_check.sh runs it under `kolorun -np 1` on a lent GPU; it needs a CUDA device)."""

import torch

import horovod.torch as hvd
from kolo import _core
from kolo.torch import nccl_submit, staging

hvd.init()
torch.cuda.set_device(hvd.local_rank())
x = torch.arange(1024.0, device="cuda")
m = x.reshape(256, 4)
reduced = hvd.allreduce(x, op=hvd.Sum, name="probe")
averaged = hvd.allreduce(x.half(), op=hvd.Average, name="probe.half")
broadcast = hvd.broadcast(x + 1, root_rank=0, name="probe.b")
gathered = hvd.allgather(m, name="probe.ag")
exchanged, splits = hvd.alltoall(m, splits=torch.tensor([256]), name="probe.a2a")
scattered = hvd.reducescatter(m, op=hvd.Sum, name="probe.rs")
grouped = hvd.grouped_allgather([m, m.double()], name="probe.gag")
grouped += hvd.grouped_reducescatter([m, m.double()], op=hvd.Sum, name="probe.grs")
print("front end:", {op: c.path for op, c in staging._choices.get("cuda", {}).items()})
print("to NCCL:", {name: nccl_submit.takes(m, op, hvd.Sum) for name, op in (
    ("allgather", _core.OP_ALLGATHER), ("alltoall", _core.OP_ALLTOALL),
    ("reducescatter", _core.OP_REDUCESCATTER))})
# Horovod's test_horovod_allreduce_average/_prescale shapes: 17x17x17 float32 (NCCL 2.28.9's
# one-rank ncclAvg lost its last element), float16 with a prescale (Horovod's rounding).
cube = torch.arange(4913.0, device="cuda").remainder(200).sub(100).reshape(17, 17, 17)
cube_average = hvd.allreduce(cube, op=hvd.Average, name="probe.cube")
half = cube.half()
half_prescaled = hvd.allreduce(half, op=hvd.Sum, prescale_factor=0.3, name="probe.pre")
half_factor = torch.tensor(0.3, dtype=torch.float16)
checks = {
    "average 17^3": torch.equal(cube_average.cpu(), cube.cpu() * hvd.size() / hvd.size()),
    "fp16 prescale": torch.equal(half_prescaled.cpu(),
                                 (half * half_factor).cpu() * hvd.size()),
    "allreduce": torch.equal(reduced.cpu(), x.cpu() * hvd.size()),
    "allreduce fp16 average": torch.equal(averaged.cpu(), x.half().cpu()),
    "broadcast": torch.equal(broadcast.cpu(), x.cpu() + 1),
    "allgather": torch.equal(gathered.cpu(), m.cpu()),
    "alltoall": torch.equal(exchanged.cpu(), m.cpu()) and splits.tolist() == [256],
    "reducescatter": torch.equal(scattered.cpu(), m.cpu()),
    "grouped": all(torch.equal(o.cpu(), t.cpu()) for o, t in zip(grouped, [m, m.double()] * 2)),
}
devices = {str(t.device) for t in [reduced, averaged, broadcast, gathered, exchanged, scattered]}
print("outputs on", sorted(devices), "right:", checks)
