"""The peers of Horovod's pytorch_synthetic_benchmark.py on a GPU (scripts/device_check.sh): the
same model, batch, optimizer and fake data, trained by plain torch in one process (--mode plain:
the cost of kolo's path at np 1), by torch DDP under torchrun (--mode ddp, gloo by default: the
peer that works with two ranks on one GPU, where NCCL refuses them), or by kolo under kolorun
(--mode kolo: Horovod's DistributedOptimizer on the same step). Prints Horovod's last line,
"Total img/sec on N GPU(s): X +-Y", so one parser reads every run.

Why --mode kolo beside Horovod's own script: on a one-GPU machine that script's
`torch.cuda.set_device(hvd.local_rank())` needs every rank to be local rank 0, i.e. two one-slot
"hosts" (`-H localhost:1,127.0.0.1:1`), which kolo then connects over TCP as it would two
machines. Users who share one GPU launch `kolorun -np 2` on one host and pick the device as
below; so does torchrun for DDP. Same launch, same script, same timing for both peers.

Each timed iteration ends with torch.cuda.synchronize(): Horovod's benchmark does not, but its
optimizer.step() waits for the gradients' allreduce, which a plain step would not, so without it
plain torch would be timed on queued, not finished, work.

    python3 bench/gpu/torch_synthetic.py --mode plain
    torchrun --nproc_per_node 2 bench/gpu/torch_synthetic.py --mode ddp --backend gloo
    kolorun -np 2 python3 bench/gpu/torch_synthetic.py --mode kolo
    (--device cpu --model resnet18: the same code paths on a machine without a GPU)
"""

import argparse
import os
import timeit

import numpy as np
import torch
import torch.nn.functional as F
from torchvision import models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("plain", "ddp", "kolo"), default="plain")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-warmup-batches", type=int, default=10)
    parser.add_argument("--num-batches-per-iter", type=int, default=10)
    parser.add_argument("--num-iters", type=int, default=10)
    args = parser.parse_args()

    rank, size, local_rank = 0, 1, 0
    if args.mode == "ddp":
        torch.distributed.init_process_group(args.backend)
        rank, size = torch.distributed.get_rank(), torch.distributed.get_world_size()
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.mode == "kolo":
        import horovod.torch as hvd  # kolo's, under kolorun

        hvd.init()
        rank, size, local_rank = hvd.rank(), hvd.size(), hvd.local_rank()
    gpu = args.device == "cuda"
    if gpu:
        # As the benchmark: one device per local rank, which on a one-GPU machine is GPU 0 for all.
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        torch.backends.cudnn.benchmark = True
    device = torch.device(args.device, torch.cuda.current_device()) if gpu else torch.device("cpu")
    model = getattr(models, args.model)().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * size)
    if args.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    if args.mode == "kolo":
        # As Horovod's benchmark: the optimizer reduces the gradients, rank 0's start for all.
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.randn(args.batch_size, 3, 224, 224).to(device)
    target = (torch.LongTensor(args.batch_size).random_() % 1000).to(device)
    synchronize = torch.cuda.synchronize if gpu else (lambda: None)

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    def timed() -> None:
        for _ in range(args.num_batches_per_iter):
            step()
        synchronize()

    timeit.timeit(step, number=args.num_warmup_batches)
    synchronize()
    img_secs = []
    for _ in range(args.num_iters):
        seconds = timeit.timeit(timed, number=1)
        img_secs.append(args.batch_size * args.num_batches_per_iter / seconds)
    mean, conf = np.mean(img_secs), 1.96 * np.std(img_secs)
    if rank == 0:
        unit = "GPU" if gpu else "CPU"
        print(f"Img/sec per {unit}: {mean:.1f} +-{conf:.1f}")
        print(f"Total img/sec on {size} {unit}(s): {size * mean:.1f} +-{size * conf:.1f}")
    if args.mode == "ddp":
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
