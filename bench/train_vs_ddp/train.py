"""One training run for bench/train_vs_ddp: the same model, batch and thread count under kolo
(DistributedOptimizer, started by kolorun) or torch DDP with gloo (started by torchrun).
Rank 0 prints `samples/s: <global samples per second>`."""

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

# The models are the synthetic benchmark's, so both measure the same networks.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pytorch_synthetic_benchmark import build  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["kolo", "ddp"], required=True)
parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
parser.add_argument("--batch-size", type=int, default=32, help="per rank")
parser.add_argument("--warmup", type=int, default=10)
parser.add_argument("--steps", type=int, default=40)


def main() -> None:
    args = parser.parse_args()
    torch.set_num_threads(1)  # two ranks share the machine's cores, in both runs
    torch.manual_seed(0)
    model, shape, _ = build(args.model)
    if args.mode == "kolo":
        import kolo.torch as hvd

        hvd.init()
        rank, size = hvd.rank(), hvd.size()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        net = model
        barrier = hvd.barrier
    else:
        import torch.distributed as dist

        dist.init_process_group("gloo")
        rank, size = dist.get_rank(), dist.get_world_size()
        net = nn.parallel.DistributedDataParallel(model)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        barrier = dist.barrier

    data = torch.randn(args.batch_size, *shape)
    target = torch.randint(0, 10, (args.batch_size,))

    def step():
        optimizer.zero_grad()
        F.cross_entropy(net(data), target).backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"samples/s: {args.batch_size * size * args.steps / elapsed:.1f}", flush=True)
    if args.mode == "ddp":
        torch.distributed.destroy_process_group()
    else:
        hvd.shutdown()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
