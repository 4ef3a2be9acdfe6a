"""What an allreduce costs the caller's thread when ranks share one GPU, per path: each step
submits one allreduce per resnet50 parameter (161 tensors, 25.6 M floats, as
DistributedOptimizer's hooks do), then synchronizes them all, as step() does. Prints, on rank 0,
the median over steps of the submit and synchronize time per tensor and of the whole step, and the
path the job took (scripts/device_check.sh runs it once per path):

    kolorun -np 2 python3 bench/gpu/shared_gpu_perop.py [--steps 20]

Without CUDA it runs on CPU tensors (KOLO_STAGE_THROUGH_HOST=shared plays the shared-GPU path on
host memory; those figures say nothing about a GPU).
"""

import argparse
import statistics
import time

import torch

import horovod.torch as hvd
from kolo import _core
from kolo.torch import shared_gpu, staging


def parameter_sizes() -> list[int]:
    try:
        import torchvision

        return [p.numel() for p in torchvision.models.resnet50().parameters()]
    except ImportError:  # resnet50's layout, roughly: 161 tensors, 25.6 M values
        return [64 * 3 * 49] + [256] * 106 + [589824] * 16 + [262144] * 16 + [1000, 2048000] \
            + [16384] * 21


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    hvd.init()
    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(0)
    grads = [torch.ones(n, device=device) for n in parameter_sizes()]
    submits, syncs, steps = [], [], []
    for step in range(args.steps + 3):
        began = time.perf_counter()
        handles = [hvd.allreduce_async_(g, op=hvd.Average, name=f"grad.{i}")
                   for i, g in enumerate(grads)]
        submitted = time.perf_counter()
        for handle in handles:
            hvd.synchronize(handle)
        if device.type == "cuda":
            torch.cuda.synchronize()
        ended = time.perf_counter()
        if step >= 3:  # the first steps export and map the mailboxes
            submits.append((submitted - began) / len(grads))
            syncs.append((ended - submitted) / len(grads))
            steps.append(ended - began)
    path = staging.path_for(device.type, _core.OP_ALLREDUCE) if device.type == "cuda" \
        else staging._FORCE_VALUE or "cpu"
    # The shared-GPU path sums every handshake already done at a synchronize() in one batch.
    sessions = list(shared_gpu._sessions.values())
    batches = f"; {sessions[0].batches / (args.steps + 3):.1f} batches per step" if sessions \
        else ""
    if hvd.rank() == 0:
        print(f"{len(grads)} tensors, path {path}: submit "
              f"{statistics.median(submits) * 1e6:.1f} us, synchronize "
              f"{statistics.median(syncs) * 1e6:.1f} us per tensor; step "
              f"{statistics.median(steps) * 1e3:.2f} ms (median of {args.steps}){batches}",
              flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
