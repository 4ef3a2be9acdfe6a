"""kolo vs torch DDP (gloo) on the same training job: one command, interleaved repeats.

    python3 bench/train_vs_ddp/run.py [--repeats 5] [--model cnn|mlp] [--batch-size 32] [--np 2]

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
    args = parser.parse_args()
    kolorun = shutil.which("kolorun") or sys.exit("kolorun is not on PATH")
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
