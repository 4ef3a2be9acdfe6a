"""NCCL's own single-rank reductions through torch.distributed (no kolo): does ncclAvg (and a
PreMulSum) write every element when the communicator has one rank? scripts/device_check.sh's
diag step runs it on a lent GPU; it needs CUDA."""

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
