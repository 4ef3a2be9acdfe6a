"""kolo vs torch DDP (gloo) on the same training job: one command, interleaved repeats.

    python3 bench/train_vs_ddp/run.py [--repeats 5] [--model cnn|mlp] [--batch-size 32] [--np 2]
    python3 bench/train_vs_ddp/run.py --config examples/configs/fashion_cnn.py [--repeats 3] \
        [--amp] [--auto-scale-lr] [--cfg-options data.train_subset=20000 schedule.epochs=2]

With --config it runs examples/train.py (the training template, any of its models and configs)
under kolorun and under torchrun --launcher ddp, and prints a markdown table of samples/s, peak
memory per rank and final test accuracy, medians and min..max over the repeats (template.py).

Each repeat runs `kolorun -np N train.py --mode kolo` and `torchrun --nproc-per-node N train.py
--mode ddp` back to back (alternating which goes first), then prints the median global samples/s
of each and the kolo/DDP ratio. Both use torch.set_num_threads(1) per rank and plain SGD with
momentum; kolo's gradients are averaged by DistributedOptimizer's hooks, DDP's by its reducer.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

from template import compare

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")


def run(cmd: list[str]) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, env=env)
    match = re.search(r"samples/s: ([0-9.]+)", proc.stdout)
    if proc.returncode != 0 or match is None:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--config", help="a config of examples/train.py: compare the template")
    parser.add_argument("--amp", action="store_true", help="with --config: train.py --amp")
    parser.add_argument("--auto-scale-lr", action="store_true",
                        help="with --config: train.py --auto-scale-lr")
    parser.add_argument("--cfg-options", nargs="+",
                        default=["data.train_subset=20000", "schedule.epochs=2"],
                        help="with --config: train.py --cfg-options (default: %(default)s)")
    args = parser.parse_args()
    kolorun = shutil.which("kolorun") or sys.exit("kolorun is not on PATH")
    if args.config:
        flags = ["--config", args.config, *(["--amp"] if args.amp else []),
                 *(["--auto-scale-lr"] if args.auto_scale_lr else []),
                 "--cfg-options", *args.cfg_options]
        with open("/proc/loadavg") as loadavg:
            load_before = loadavg.read().split()[:3]
        table = compare(args.np, args.repeats, kolorun, flags)
        with open("/proc/loadavg") as loadavg:
            load_after = loadavg.read().split()[:3]
        print(f"{args.config} {' '.join(flags[2:])}, {args.np} ranks, {args.repeats} repeats "
              f"(interleaved); load average before {' '.join(load_before)}, after "
              f"{' '.join(load_after)}, {os.cpu_count()} CPUs\n")
        print(table)
        return
    torchrun = shutil.which("torchrun") or sys.exit("torchrun is not on PATH")
    common = ["--model", args.model, "--batch-size", str(args.batch_size), "--steps",
              str(args.steps)]
    commands = {
        "kolo": [kolorun, "-np", str(args.np), sys.executable, TRAIN, "--mode", "kolo", *common],
        "ddp": [torchrun, "--nproc-per-node", str(args.np), "--master-port", "29533", TRAIN,
                "--mode", "ddp", *common],
    }
    results: dict[str, list[float]] = {"kolo": [], "ddp": []}
    for i in range(args.repeats):
        order = ["kolo", "ddp"] if i % 2 == 0 else ["ddp", "kolo"]
        for name in order:
            results[name].append(run(commands[name]))
        print(f"repeat {i + 1}/{args.repeats}: kolo {results['kolo'][-1]:.1f}  "
              f"ddp {results['ddp'][-1]:.1f} samples/s", flush=True)
    kolo, ddp = statistics.median(results["kolo"]), statistics.median(results["ddp"])
    print(f"model {args.model}, batch {args.batch_size}/rank, {args.np} ranks, "
          f"{args.repeats} repeats")
    print(f"median samples/s: kolo {kolo:.1f}  ddp(gloo) {ddp:.1f}  kolo/ddp {kolo / ddp:.3f}")


if __name__ == "__main__":
    main()
