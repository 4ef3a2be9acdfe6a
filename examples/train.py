"""A data-parallel training template: the user guides' train.py, on Horovod's API (kolo).

    kolorun -np 2 python3 examples/train.py --config examples/configs/fashion_cnn.py \
        --work-dir work_dirs/cnn --amp --auto-scale-lr
    mpirun --hostfile /etc/mpi/hostfile --allow-run-as-root -mca btl ^openib -np 32 \
        python3 examples/train.py --config ... --work-dir ...          # or horovodrun, same flags
    torchrun --nproc-per-node 2 examples/train.py --launcher ddp --config ...   # torch DDP
    ... --resume work_dirs/cnn/latest.pth                               # any number of ranks

The config (a .py or .yaml file, examples/configs/) chooses model, data, optimizer and schedule;
`--cfg-options section.key=value ...` overrides single keys. Rank 0 alone writes --work-dir:
train.log, metrics.jsonl (one JSON object per epoch: losses and accuracies averaged over every
rank, samples/s, peak memory per rank, LR) and checkpoints epoch_N.pth and latest.pth (model,
optimizer, AMP scaler, epoch and sampler position).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import time
from pathlib import Path

import torch

from trainkit import checkpoint
from trainkit.artefacts import Metrics, setup_logging
from trainkit.config import load_config
from trainkit.data import ResumableSampler, build_dataset, test_loader, train_loader
from trainkit.distributed import start
from trainkit.loop import Job, evaluate, train_one_epoch
from trainkit.models import build_model
from trainkit.schedule import LearningRate, build_optimizer

parser = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--config", help="a .py or .yaml config (default: the built-in defaults, "
                                     "a CNN on Fashion-MNIST)")
parser.add_argument("--work-dir", default="work_dirs/train",
                    help="where rank 0 writes train.log, metrics.jsonl and checkpoints")
parser.add_argument("--amp", action="store_true",
                    help="mixed precision: autocast to bfloat16 on CPU, float16 with a "
                         "GradScaler on CUDA")
parser.add_argument("--auto-scale-lr", action="store_true",
                    help="LR x world size, reached by a linear warm-up (schedule.warmup_epochs)")
parser.add_argument("--resume", metavar="PATH",
                    help="continue from a checkpoint (epoch_N.pth or latest.pth), on any number "
                         "of ranks")
parser.add_argument("--seed", type=int, default=42,
                    help="model initialisation and data order (the same on every rank)")
parser.add_argument("--launcher", choices=["horovod", "ddp"], default="horovod",
                    help="horovod: Horovod's API (kolo; kolorun, horovodrun, mpirun); "
                         "ddp: torch DDP under torchrun")
parser.add_argument("--cfg-options", nargs="+", default=[], metavar="SECTION.KEY=VALUE",
                    help="override config keys, e.g. data.train_subset=2000 schedule.epochs=3")


def pick_device(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)  # one GPU per rank on each host
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def main() -> None:
    args = parser.parse_args()
    config = load_config(args.config, args.cfg_options)
    backend = start(args.launcher)
    rank, size = backend.rank, backend.size
    device = pick_device(backend.local_rank)
    # Ranks on one host share its cores.
    torch.set_num_threads(config["train"]["threads"]
                          or max(1, (os.cpu_count() or 1) // backend.local_size))
    work_dir = Path(args.work_dir)
    logger = setup_logging(rank, work_dir)
    metrics = Metrics(rank, work_dir)
    random.seed(args.seed)
    torch.manual_seed(args.seed)  # the same initial weights everywhere, before any broadcast

    train_set = build_dataset(config["data"], train=True)
    test_set = build_dataset(config["data"], train=False)
    sampler = ResumableSampler(train_set, size, rank, seed=args.seed)
    model = build_model(config["model"]).to(device)
    optimizer = build_optimizer(model, config["optimizer"])
    model, optimizer = backend.wrap(model, optimizer)
    scaler = torch.amp.GradScaler("cuda", enabled=args.amp and device.type == "cuda")
    amp_dtype = (torch.float16 if device.type == "cuda" else torch.bfloat16) if args.amp else None
    schedule = LearningRate(config["optimizer"]["lr"], size, args.auto_scale_lr,
                            config["schedule"])

    logger.info("%d ranks (%s) on %d host(s), device %s, amp %s, config %s: %s", size,
                backend.name, backend.hosts, device, amp_dtype, args.config or "defaults", config)
    first_epoch, consumed = 1, 0
    if args.resume:
        state = checkpoint.load_on_rank0(args.resume, backend)
        backend.unwrap(model).load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if state["scaler"]:
            scaler.load_state_dict(state["scaler"])
        first_epoch, consumed = state["epoch"] + 1, state["consumed"]
        logger.info("resumed from %s: %d epoch(s) done and %d samples of epoch %d, saved by %d "
                    "rank(s), now %d", args.resume, state["epoch"], consumed, first_epoch,
                    state["world_size"], size)
    backend.sync_initial_state(model, optimizer)
    torch.manual_seed(args.seed + rank)  # dropout masks differ between ranks

    job = Job(backend, model, optimizer, scaler, schedule, device, amp_dtype, logger,
              train_loader(train_set, config["data"], sampler),
              test_loader(test_set, config["data"], rank, size), sampler, config["train"])
    metrics.write({"event": "start", "world_size": size, "hosts": backend.hosts,
                   "launcher": backend.name,
                   "amp": str(amp_dtype) if amp_dtype else None, "resume": args.resume,
                   "first_epoch": first_epoch, "consumed": consumed, "config": config})
    if args.resume and config["train"]["eval_on_resume"]:
        restored = evaluate(job)
        logger.info("restored model: test loss %.4f, accuracy %.4f", restored["test_loss"],
                    restored["test_acc"])
        metrics.write({"event": "resumed", "epoch": first_epoch - 1, "world_size": size,
                       **restored})

    def save(epoch_done: int, position: int, extra: dict) -> None:
        if rank != 0:
            return
        state = {"model": backend.unwrap(model).state_dict(), "optimizer": optimizer.state_dict(),
                 "scaler": scaler.state_dict(), "epoch": epoch_done, "consumed": position,
                 "world_size": size, "seed": args.seed, "config": config, **extra}
        checkpoint.save(work_dir / "latest.pth", state)

    epochs = config["schedule"]["epochs"]
    started = time.monotonic()
    for epoch in range(first_epoch, epochs + 1):
        stats = train_one_epoch(job, epoch, consumed,
                                lambda position, e=epoch: save(e - 1, position, {}))
        consumed = 0
        stats.update(evaluate(job))
        record = {"epoch": epoch, "world_size": size, **stats}
        metrics.write(record)
        logger.info("epoch %d/%d: train loss %.4f acc %.4f, test loss %.4f acc %.4f, "
                    "%.1f samples/s, peak memory %.0f MiB per rank", epoch, epochs,
                    stats["train_loss"], stats["train_acc"], stats["test_loss"],
                    stats["test_acc"], stats["samples_per_s"], stats["peak_mem_mb"])
        save(epoch, 0, {"metrics": record})
        if rank == 0 and (epoch % config["train"]["checkpoint_interval"] == 0 or epoch == epochs):
            shutil.copyfile(work_dir / "latest.pth", work_dir / f"epoch_{epoch}.pth.tmp")
            os.replace(work_dir / f"epoch_{epoch}.pth.tmp", work_dir / f"epoch_{epoch}.pth")
    logger.info("done: epochs %d..%d on %d rank(s) in %.1f s", first_epoch, epochs, size,
                time.monotonic() - started)
    backend.shutdown()


if __name__ == "__main__":
    main()
