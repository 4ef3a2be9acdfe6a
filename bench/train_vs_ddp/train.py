"""One training run for bench/train_vs_ddp: the same model, data, seed and thread count under kolo
(horovod.torch's DistributedOptimizer, started by kolorun, with or without --mpi), under the real
Horovod 0.28.1 (`--mode horovod`: the same code, in bench/horovod_reference's venv where
`horovod.torch` is Horovod's own, started by its horovodrun) or torch DDP
over gloo (started by torchrun, one process per rank), or `local`: the same processes under
torchrun, gloo only for the barriers around the timed steps, each rank training alone with no
gradient exchange, the ceiling that no library's communication can beat on these cores, or
`lockstep`: `local` with one 4-byte gloo allreduce after every step, so that every step waits
for the slower rank as synchronous data parallelism must, still without any gradient exchange:
the ceiling of any synchronous library (the ranks' steps vary on shared cores, and a step then
takes the longer of the two).

Each rank writes `<out>/rank<r>.json`: global samples/s (rank 0's clock: from the median time of
a timed step, and over the whole timed run between barriers), its peak resident memory
(ru_maxrss), the CPU time its threads used per timed step, and on rank 0 the loss of every step
(warm-up included, from step 0), the final loss and accuracy on a held-out set, and with
--timeline the per-step times that overlap.py lines up with kolo's timeline.
"""

import argparse
import importlib.util
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn

from models import MODELS, Task, build

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["kolo", "horovod", "ddp", "local", "lockstep"],
                    required=True)
parser.add_argument("--model", choices=MODELS, default="cnn")
parser.add_argument("--batch-size", type=int, default=32, help="per rank")
parser.add_argument("--warmup", type=int, default=10, help="steps before the timed ones")
parser.add_argument("--steps", type=int, default=40, help="timed steps")
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--eval-size", type=int, default=512)
parser.add_argument("--out", required=True, help="directory for rank<r>.json")
parser.add_argument("--timeline", help="kolo: record the timed steps' timeline into this file")
parser.add_argument("--threads", type=int, default=1,
                    help="torch threads per rank; 0: what the launcher gives (kolorun's placement, "
                         "torchrun's OMP_NUM_THREADS=1), as a user's script that sets none")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def thread_cpu_s() -> dict[str, float]:
    """CPU seconds (user + system) each of this process's threads used so far, by thread name
    (the main thread as "main"): where a rank's CPU goes, which wall time on shared cores hides."""
    ticks = os.sysconf("SC_CLK_TCK")
    usage: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        name = "main" if task.name == str(os.getpid()) else stat[stat.index("(") + 1:
                                                                 stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        usage[name] = usage.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return usage


def main() -> None:
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.threads > 0:
        torch.set_num_threads(args.threads)  # the ranks share the machine's cores
    torch.manual_seed(args.seed)
    model = build(args.model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    if args.mode in ("kolo", "horovod"):
        import horovod.torch as hvd

        if args.mode == "horovod" and importlib.util.find_spec("kolo") is not None:
            raise SystemExit("--mode horovod: kolo is importable here, so horovod.torch may be "
                             "kolo's alias; run under the real Horovod's venv")
        hvd.init()
        rank, size = hvd.rank(), hvd.size()
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        net, barrier = model, hvd.barrier
    else:
        dist.init_process_group("gloo")
        rank, size = dist.get_rank(), dist.get_world_size()
        net, barrier = model, dist.barrier
        if args.mode == "ddp":
            net = nn.parallel.DistributedDataParallel(model)
    lockstep = torch.zeros(1) if args.mode == "lockstep" else None

    # Every step's global batch drawn up front (no data work inside the timed loop); this rank
    # trains on its slice of it.
    task = Task(args.model, args.seed)
    total = args.warmup + args.steps
    mine = slice(rank * args.batch_size, (rank + 1) * args.batch_size)
    batches = [tuple(t[mine] for t in task.batch(args.batch_size * size)) for _ in range(total)]
    eval_x, eval_y = task.batch(args.eval_size)

    losses: list[float] = []
    marks: list[tuple[int, int, int]] = []  # (backward begins, step() called, step() returned)

    def step(x: torch.Tensor, y: torch.Tensor, record: bool) -> None:
        optimizer.zero_grad()
        loss = task.loss(net(x), y)
        begin = time.monotonic_ns()
        loss.backward()
        called = time.monotonic_ns()
        optimizer.step()
        if lockstep is not None:
            dist.all_reduce(lockstep)  # 4 bytes: the wait for the slower rank, no gradients
        if record:  # the timed steps
            marks.append((begin, called, time.monotonic_ns()))
        losses.append(loss.item())

    for x, y in batches[: args.warmup]:
        step(x, y, False)
    timeline_zero = None
    if args.timeline:
        if args.mode != "kolo":
            raise SystemExit("--timeline is kolo's (HOROVOD_TIMELINE)")
        # The timeline's clock starts inside start_timeline (steady_clock, CLOCK_MONOTONIC as
        # time.monotonic_ns): the moment it returns is its zero to within microseconds.
        hvd.start_timeline(args.timeline)
        timeline_zero = time.monotonic_ns()
    barrier()
    cpu_before = thread_cpu_s()
    start = time.monotonic_ns()
    for x, y in batches[args.warmup:]:
        step(x, y, True)
    barrier()
    elapsed = (time.monotonic_ns() - start) / 1e9
    cpu_after = thread_cpu_s()
    ends = [start] + [m[2] for m in marks]
    step_s = [(b - a) / 1e9 for a, b in zip(ends, ends[1:])]
    cpu_ms = {name: 1000 * (used - cpu_before.get(name, 0.0)) / args.steps
              for name, used in cpu_after.items()}
    if args.timeline:
        hvd.stop_timeline()

    result = {"rank": rank, "size": size, "peak_rss_mib": peak_rss_mib(),
              "cpu_ms_per_step": sum(cpu_ms.values()),
              "thread_cpu_ms_per_step": {k: v for k, v in cpu_ms.items() if v > 0}}
    if rank == 0:
        model.eval()
        with torch.no_grad():
            output = model(eval_x)
        result.update({
            # From the median step: a burst of someone else's work on shared cores stretches a
            # few steps, which the median leaves out and the whole run's time does not.
            "samples_per_s": args.batch_size * size / statistics.median(step_s),
            "samples_per_s_whole_run": args.batch_size * size * args.steps / elapsed,
            "losses": losses,
            "eval_loss": task.loss(output, eval_y).item(),
            "eval_accuracy": task.accuracy(output, eval_y),
            "parameters": sum(p.numel() for p in model.parameters()),
            "parameter_tensors": sum(1 for _ in model.parameters()),
        })
        if args.timeline:
            result["timeline"] = {
                "path": args.timeline, "zero_ns": timeline_zero,
                "steps": [[(t - timeline_zero) / 1000 for t in m] for m in marks],
            }
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    if args.mode not in ("kolo", "horovod"):
        # Seen with torch 2.13: tearing DDP down can deadlock (freeing its Reducer frees the gloo
        # process group, which joins gloo's run loop while holding the GIL that the loop needs
        # to free its last work). Every figure is written and no collective is in flight after
        # the barrier: end without the teardown.
        torch.distributed.barrier()
        sys.stdout.flush()
        os._exit(0)
    hvd.shutdown()


if __name__ == "__main__":
    main()
