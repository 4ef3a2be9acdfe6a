"""kolo against torch DDP (gloo) on the same training jobs: one command, interleaved rounds.

    python3 bench/train_vs_ddp/run.py [--models mlp,cnn,transformer] [--rounds 5] [--np 2]
        [--runners kolo,kolo-mpi,horovod,ddp,local,lockstep] [--steps N] [--warmup 10]
        [--out-dir DIR]
        [--horovod-python ~/.cache/kolo/horovod-0.28.1/bin/python [--horovod-controller mpi]]
    python3 bench/train_vs_ddp/run.py --config examples/configs/fashion_cnn.py [--repeats 3] \
        [--amp] [--auto-scale-lr] [--cfg-options data.train_subset=20000 schedule.epochs=2]

Every round trains each model (models.py: an MLP, a small CNN, a small transformer) once with
each runner, the runners' order rotating from round to round:
  kolo      `kolorun -np N train.py --mode kolo`: horovod.torch's DistributedOptimizer over
            kolo's own transports (shared memory on one host);
  kolo-mpi  `kolorun --mpi -np N train.py --mode kolo`: the same script, collectives on OpenMPI;
  horovod   with --horovod-python VENV/bin/python only: the same script under the real Horovod
            0.28.1 (bench/horovod_reference builds it), started by that venv's `horovodrun -np N
            --gloo` (gloo controller and CPU ops; --horovod-controller mpi for OpenMPI's), with
            Horovod's defaults (fusion threshold 128 MiB, cycle time 1 ms: kolo's too); without
            the option a line says it was skipped;
  ddp       `python -m torch.distributed.run --standalone --nproc-per-node N train.py --mode ddp`:
            DistributedDataParallel over gloo, one process per rank (torchrun);
  local     the same with `--mode local`: N processes that train alone, no gradient exchange:
            the ceiling of samples/s on these cores for any library (not trained the same);
  lockstep  `--mode lockstep`: `local` plus one 4-byte gloo allreduce per step, so each step
            waits for the slower rank: the ceiling for any synchronous library, still without
            gradient exchange.
Each library is launched as its users launch it (--launch plain, the default): no
OMP_NUM_THREADS and no torch.set_num_threads, so kolorun's placement (a share of the cores and a
thread count per rank, docs/guide/placement.md) and torchrun's OMP_NUM_THREADS=1 decide;
--launch one-thread gives every runner's ranks one torch thread instead (the earlier setting).
All use SGD with momentum, the same seed (the same initial weights
and samples in every round) and the same steps. Then one more kolo run per model records the
timeline, from which overlap.py computes how much allreduce time overlaps backward.

It prints, per model, the four points of the comparison (median samples/s and the kolo/DDP and
kolo/kolo-mpi ratios; peak resident memory per rank; convergence: loss curves and held-out
loss/accuracy checked against DDP's within a stated tolerance; stability: the coefficient of
variation of samples/s over the rounds), writes them to DIR/report.md with the raw figures in
DIR/results.json, and plots samples/s and loss vs step to DIR/train_vs_ddp.png (needs
`pip install matplotlib`; without it the plot is skipped, saying so).

With --config it compares examples/train.py (the training template, any of its models and
configs) under kolorun and torchrun --launcher ddp instead (template.py).
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from models import MODELS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "horovod_reference"))
import launch as horovod_reference  # noqa: E402  (bench/horovod_reference/launch.py)
from overlap import analyse
from report import RUNNERS, markdown, plot
from template import compare

HERE = Path(__file__).resolve().parent
TRAIN = HERE / "train.py"
BATCH = {"mlp": 64, "cnn": 32, "transformer": 16}  # per rank
# Timed steps: 5-8 s of training per run for each model (a step of the MLP takes about 10 ms on
# this machine, of the CNN 20 ms, of the transformer 75 ms). Shorter runs (2-3 s) left the median
# step at the mercy of the shared cores' moods: kolo against kolo --mpi on the MLP read 0.91 in
# one 3-round run of 160 steps and 1.10 (kolo ahead in every round) in a 5-round run of 600.
STEPS = {"mlp": 600, "cnn": 240, "transformer": 100}


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def commands(np_: int, kolorun: str, horovod_python: str | None = None,
             horovod_controller: str = "gloo") -> dict[str, list[str]]:
    found = {
        "kolo": [kolorun, "-np", str(np_), sys.executable, str(TRAIN), "--mode", "kolo"],
        "kolo-mpi": [kolorun, "--mpi", "-np", str(np_), sys.executable, str(TRAIN), "--mode",
                     "kolo"],
        "ddp": [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(np_), str(TRAIN), "--mode", "ddp"],
        "local": [sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc-per-node", str(np_), str(TRAIN), "--mode", "local"],
        "lockstep": [sys.executable, "-m", "torch.distributed.run", "--standalone",
                     "--nproc-per-node", str(np_), str(TRAIN), "--mode", "lockstep"],
    }
    if horovod_python:
        found["horovod"] = horovod_reference.horovodrun(
            horovod_python, np_, horovod_controller, [horovod_python, str(TRAIN), "--mode",
                                                      "horovod"])
    return found


def runner_environment(runner: str, horovod_python: str | None,
                       launch: str = "plain") -> dict[str, str]:
    """The environment of a runner's launcher: plain, what a user's shell has (no
    OMP_NUM_THREADS: each launcher's default decides); one-thread, one OpenMP thread per rank.
    The real Horovod's also one in which `horovod` cannot resolve to kolo's alias package."""
    base = horovod_reference.environment(horovod_python) if runner == "horovod" else os.environ
    env = {k: v for k, v in base.items() if k != "OMP_NUM_THREADS"}
    if launch == "one-thread":
        env["OMP_NUM_THREADS"] = "1"
    return env


def select_runners(requested: list[str], horovod_python: str | None,
                   have_mpirun: bool) -> tuple[list[str], list[str]]:
    """The runners that can run here, in the requested order, and a line for each one left out
    (the Horovod peer without --horovod-python, kolo-mpi without mpirun)."""
    chosen, notes = [], []
    for runner in requested:
        if runner == "horovod" and not horovod_python:
            notes.append("horovod skipped: no --horovod-python (bench/horovod_reference/build.sh "
                         "builds the real Horovod 0.28.1)")
        elif runner == "kolo-mpi" and not have_mpirun:
            notes.append("kolo-mpi skipped: mpirun is not on PATH (apt-get install openmpi-bin)")
        else:
            chosen.append(runner)
    return chosen, notes


def run_once(cmd: list[str], out: Path, env: dict[str, str]) -> dict:
    """One training run; its ranks' figures combined (the largest rank's peak memory, the mean
    of their CPU time per step)."""
    proc = subprocess.run([*cmd, "--out", str(out)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900, env=env)
    ranks = sorted(out.glob("rank*.json"))
    if proc.returncode != 0 or not ranks:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}")
    per_rank = [json.loads(p.read_text()) for p in ranks]
    result = next(r for r in per_rank if r["rank"] == 0)
    result["peak_rss_mib"] = max(r["peak_rss_mib"] for r in per_rank)
    result["peak_rss_per_rank_mib"] = [r["peak_rss_mib"] for r in per_rank]
    result["cpu_ms_per_step"] = sum(r["cpu_ms_per_step"] for r in per_rank) / len(per_rank)
    result["thread_cpu_ms_per_step_per_rank"] = [r["thread_cpu_ms_per_step"] for r in per_rank]
    return result


def compare_template(args: argparse.Namespace, kolorun: str) -> None:
    flags = ["--config", args.config, *(["--amp"] if args.amp else []),
             *(["--auto-scale-lr"] if args.auto_scale_lr else []),
             "--cfg-options", *args.cfg_options]
    before = load_average()
    table = compare(args.np, args.rounds, kolorun, flags)
    print(f"{args.config} {' '.join(flags[2:])}, {args.np} ranks, {args.rounds} repeats "
          f"(interleaved); load average before {before}, after {load_average()}, "
          f"{os.cpu_count()} CPUs\n")
    print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", "--repeats", type=int, default=5)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated, of %(default)s")
    parser.add_argument("--runners", default=",".join(RUNNERS),
                        help="comma-separated, of %(default)s")
    parser.add_argument("--batch-size", type=int,
                        help="per rank, for every model (default: " + ", ".join(
                            f"{m} {b}" for m, b in BATCH.items()) + ")")
    parser.add_argument("--steps", type=int,
                        help="timed steps per run, for every model (default: " + ", ".join(
                            f"{m} {n}" for m, n in STEPS.items()) + ")")
    parser.add_argument("--warmup", type=int, default=10, help="steps before the timed ones")
    parser.add_argument("--no-timeline", action="store_true",
                        help="skip the timeline run (no overlap figures)")
    parser.add_argument("--out-dir", default=str(HERE / "results"),
                        help="report.md, results.json and the plot (default: %(default)s)")
    parser.add_argument("--config", help="a config of examples/train.py: compare the template")
    parser.add_argument("--amp", action="store_true", help="with --config: train.py --amp")
    parser.add_argument("--auto-scale-lr", action="store_true",
                        help="with --config: train.py --auto-scale-lr")
    parser.add_argument("--cfg-options", nargs="+",
                        default=["data.train_subset=20000", "schedule.epochs=2"],
                        help="with --config: train.py --cfg-options (default: %(default)s)")
    parser.add_argument("--horovod-python",
                        help="the python of a venv with the real Horovod 0.28.1 "
                             "(bench/horovod_reference/build.sh): adds the horovod runner")
    parser.add_argument("--launch", choices=["plain", "one-thread"], default="plain",
                        help="plain: each library as its users launch it (default); one-thread: "
                             "every rank one torch thread")
    parser.add_argument("--horovod-controller", choices=horovod_reference.CONTROLLERS,
                        default="gloo", help="horovodrun's controller for the horovod runner")
    args = parser.parse_args()
    kolorun = shutil.which("kolorun") or sys.exit("kolorun is not on PATH")
    if args.config:
        compare_template(args, kolorun)
        return

    models = args.models.split(",")
    runners = args.runners.split(",")
    for name, known in (("model", MODELS), ("runner", RUNNERS)):
        for x in models if name == "model" else runners:
            if x not in known:
                sys.exit(f"unknown {name} '{x}' (one of {', '.join(known)})")
    runners, notes = select_runners(runners, args.horovod_python,
                                    shutil.which("mpirun") is not None)
    for note in notes:
        print(note, flush=True)
    out_dir = Path(args.out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir / "runs", ignore_errors=True)
    cmds = commands(args.np, kolorun, args.horovod_python, args.horovod_controller)
    envs = {r: runner_environment(r, args.horovod_python, args.launch) for r in runners}
    threads = "0" if args.launch == "plain" else "1"

    def flags(model: str) -> list[str]:
        return ["--model", model, "--batch-size", str(args.batch_size or BATCH[model]),
                "--steps", str(args.steps or STEPS[model]), "--warmup", str(args.warmup),
                "--threads", threads]

    load_before = load_average()
    runs: dict[str, dict[str, list[dict]]] = {m: {r: [] for r in runners} for m in models}
    for i in range(args.rounds):
        order = runners[i % len(runners):] + runners[:i % len(runners)]
        for model in models:
            for runner in order:
                out = out_dir / "runs" / model / runner / str(i)
                runs[model][runner].append(run_once(cmds[runner] + flags(model), out,
                                                    envs[runner]))
            print(f"round {i + 1}/{args.rounds} {model}: " + "  ".join(
                f"{r} {runs[model][r][-1]['samples_per_s']:.0f}" for r in runners)
                + " samples/s", flush=True)
    overlaps = {}
    if not args.no_timeline and "kolo" in runners:
        for model in models:
            out = out_dir / "runs" / model / "kolo-timeline"
            timeline = out / "timeline.json"
            result = run_once(cmds["kolo"] + flags(model) + ["--timeline", str(timeline)], out,
                              envs["kolo"])
            overlaps[model] = analyse(timeline, result["timeline"]["steps"])
    load_after = load_average()

    command = "python3 bench/train_vs_ddp/run.py " + " ".join(sys.argv[1:])
    header = (f"`{command.strip()}`: {args.np} ranks, {args.rounds} rounds (runners interleaved), "
              f"{args.warmup} warm-up + " + (f"{args.steps}" if args.steps else ", ".join(
                  f"{m} {STEPS[m]}" for m in models)) + " timed steps, seed 0, launched "
              f"{args.launch}; {os.cpu_count()} CPUs, load average {load_before} before, "
              f"{load_after} after; "
              f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    out_dir.mkdir(parents=True, exist_ok=True)
    plotted = plot(runs, out_dir / "train_vs_ddp.png")
    text = f"{header}\n\n{markdown(runs, overlaps)}\n{plotted}\n"
    (out_dir / "report.md").write_text(text)
    (out_dir / "results.json").write_text(json.dumps({"runs": runs, "overlap": overlaps}))
    print(f"\n{text}")


if __name__ == "__main__":
    main()
