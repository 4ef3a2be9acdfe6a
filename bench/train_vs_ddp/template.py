"""kolo vs torchrun + DDP on examples/train.py, the training template, with one of its configs:
the same file, data, seed and flags under `kolorun -np N` (Horovod API) and under
`torchrun --nproc-per-node N ... --launcher ddp`, alternating which goes first. Each run's
metrics.jsonl gives the last epoch's samples/s, the peak memory per rank (the largest rank's
resident set on CPU) and the final test accuracy; the table shows medians over the repeats and
their run-to-run spread (min..max). Repeat i trains with --seed 42+i on both sides, so the
accuracy spread is over seeds (with one seed both sides train the same model)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TRAIN = Path(__file__).resolve().parents[2] / "examples" / "train.py"
SIDES = ("kolo", "ddp")


def commands(np_: int, kolorun: str, args: list[str]) -> dict[str, list[str]]:
    return {
        "kolo": [kolorun, "-np", str(np_), sys.executable, str(TRAIN), *args],
        "ddp": [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(np_), str(TRAIN), "--launcher", "ddp", *args],
    }


def run_once(cmd: list[str], work_dir: Path, seed: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([*cmd, "--work-dir", str(work_dir), "--seed", str(seed)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=1800, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}")
    epochs = [json.loads(line) for line in (work_dir / "metrics.jsonl").read_text().splitlines()]
    last = [r for r in epochs if "event" not in r][-1]
    return {"samples_per_s": last["samples_per_s"], "peak_mem_mb": last["peak_mem_mb"],
            "test_acc": last["test_acc"]}


def spread(values: list[float], fmt: str) -> str:
    low, mid, high = (fmt.format(v) for v in (min(values), statistics.median(values), max(values)))
    return f"{mid} ({low}..{high})"


def compare(np_: int, repeats: int, kolorun: str, train_args: list[str]) -> str:
    """Runs both sides `repeats` times, interleaved; returns the markdown table."""
    cmds = commands(np_, kolorun, train_args)
    results: dict[str, list[dict]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="kolo-train-vs-ddp-") as tmp:
        for i in range(repeats):
            for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
                results[side].append(run_once(cmds[side], Path(tmp) / f"{side}{i}", 42 + i))
            print(f"repeat {i + 1}/{repeats}: " + "  ".join(
                f"{side} {results[side][-1]['samples_per_s']:.0f} samples/s, acc "
                f"{results[side][-1]['test_acc']:.4f}" for side in SIDES), flush=True)

    def column(side: str, key: str) -> list[float]:
        return [r[key] for r in results[side]]

    def ratio(key: str) -> str:
        kolo, ddp = statistics.median(column("kolo", key)), statistics.median(column("ddp", key))
        return f"{kolo / ddp:.3f}"

    def row(label: str, key: str, fmt: str) -> str:
        return (f"| {label} | {spread(column('kolo', key), fmt)} | "
                f"{spread(column('ddp', key), fmt)} | {ratio(key)} |")

    return "\n".join([
        "| median (min..max) | kolo (kolorun, Horovod API) | torchrun + DDP (gloo) | kolo / DDP |",
        "| --- | --- | --- | --- |",
        row("samples/s (last epoch)", "samples_per_s", "{:.0f}"),
        row("peak memory per rank, MiB", "peak_mem_mb", "{:.0f}"),
        row("final test accuracy", "test_acc", "{:.4f}"),
    ])
