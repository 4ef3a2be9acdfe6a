"""NCCL's own single-rank reductions without kolo: does ncclAvg (and a PreMulSum) write every
element when the communicator has one rank? In place through torch.distributed, and out of place
(kolo's single-tensor call) through CuPy's NCCL binding where CuPy is installed.
scripts/device_check.sh's diag step runs it on a lent GPU; it needs CUDA."""

import os

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
results = []
for op_name in ("SUM", "AVG", "PREMUL_SUM"):
    for dtype in (torch.float32, torch.float16):
        for count in (17, 289, 4096, 4913, 65537):
            expected = torch.arange(count, dtype=torch.float32).remainder(200).sub(100).to(dtype)
            tensor = torch.full((count,), 7.0, dtype=dtype, device="cuda")  # stale values
            tensor.copy_(expected.cuda())
            if op_name == "PREMUL_SUM":
                op = dist._make_nccl_premul_sum(1.0)
            else:
                op = getattr(dist.ReduceOp, op_name)
            dist.all_reduce(tensor, op=op)
            torch.cuda.synchronize()
            wrong = (tensor.cpu() != expected).nonzero().flatten().tolist()
            if wrong:
                results.append(f"{op_name} {dtype} n={count}: {len(wrong)} wrong, first at "
                               f"{wrong[0]} ({tensor[wrong[0]].item()})")
print(f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))} one rank, torch.distributed: "
      + ("; ".join(results) if results else "every SUM, AVG and PREMUL_SUM result right"))
dist.destroy_process_group()

try:
    import cupy
    from cupy.cuda import nccl
except ImportError as error:
    print(f"out of place: CuPy's NCCL unavailable ({error})")
else:
    comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
    wrong_out = []
    for op_name, op in (("SUM", nccl.NCCL_SUM), ("AVG", getattr(nccl, "NCCL_AVG", 4))):
        for count in (17, 289, 4096, 4913, 65537):
            source = cupy.arange(count, dtype=cupy.float32) % 200 - 100
            target = cupy.full(count, -1.0, dtype=cupy.float32)
            stream = cupy.cuda.get_current_stream()
            comm.allReduce(source.data.ptr, target.data.ptr, count, nccl.NCCL_FLOAT32, op,
                           stream.ptr)
            stream.synchronize()
            bad = cupy.nonzero(target != source)[0].get().tolist()
            if bad:
                wrong_out.append(f"{op_name} n={count}: {len(bad)} wrong, first at {bad[0]}")
    print(f"NCCL {nccl.get_version()} one rank, out of place (CuPy): "
          + ("; ".join(wrong_out) if wrong_out else "every SUM and AVG result right"))
