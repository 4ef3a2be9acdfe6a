"""The four points for each model, from every round's runs: speed (median samples/s and the
ratios), memory (peak resident set per rank), convergence (loss curve and held-out loss/accuracy
against DDP's, checked against a tolerance) and stability (run-to-run spread), as markdown, and
the plot beside it.

`runs[model][runner]` is the list of one runner's rounds, each {"samples_per_s", "peak_rss_mib"
(the largest rank's), "cpu_ms_per_step" (the ranks' mean, all threads), "losses" (rank 0's,
per step), "eval_loss", "eval_accuracy"}. `local` and `lockstep` (no gradient exchange) train
differently: they have speed and memory figures but no convergence check.
"""

from __future__ import annotations

import statistics
from pathlib import Path

RUNNERS = ("kolo", "kolo-mpi", "horovod", "ddp", "local", "lockstep")
LABELS = {"kolo": "kolo (own transports)", "kolo-mpi": "kolo --mpi (OpenMPI)",
          "horovod": "Horovod 0.28.1", "ddp": "torch DDP (gloo)",
          "local": "no communication (ceiling)",
          "lockstep": "lockstep, no gradients (synchronous ceiling)"}
SHORT = {"kolo": "kolo", "kolo-mpi": "kolo --mpi", "horovod": "Horovod", "ddp": "DDP (gloo)",
         "local": "no comm.", "lockstep": "lockstep"}
# Convergence: both sides start from the same seed, see the same samples and average the same
# gradients; they differ only in the order floating-point sums are taken, so their losses agree
# far inside these bounds (a real difference, e.g. a gradient averaged over the wrong count or
# one rank's gradient dropped, moves the loss curve by tens of percent within a few steps).
LOSS_RTOL = 0.02        # every step's training loss and the final held-out loss, relative to DDP
LOSS_FLOOR = 0.05       # ... or to this, when DDP's loss is smaller (a nearly solved task)
ACCURACY_ATOL = 0.02    # the final held-out accuracy, absolute


def spread(values: list[float], fmt: str) -> str:
    low, mid, high = (fmt.format(v) for v in (min(values), statistics.median(values), max(values)))
    return f"{mid} ({low}..{high})"


def cv_percent(values: list[float]) -> float:
    """Coefficient of variation (sample stdev / mean), in percent; 0 for a single value."""
    if len(values) < 2:
        return 0.0
    return 100 * statistics.stdev(values) / statistics.fmean(values)


def convergence(runs: dict[str, list[dict]], runner: str) -> dict:
    """`runner` against DDP, round by round (same seed in every round): the largest relative
    difference of any step's training loss, of the held-out loss, and the largest accuracy gap."""
    step_rel = eval_rel = acc_gap = 0.0
    for mine, ddp in zip(runs[runner], runs["ddp"]):
        for a, b in zip(mine["losses"], ddp["losses"]):
            step_rel = max(step_rel, abs(a - b) / max(abs(b), LOSS_FLOOR))
        eval_rel = max(eval_rel, abs(mine["eval_loss"] - ddp["eval_loss"])
                       / max(abs(ddp["eval_loss"]), LOSS_FLOOR))
        acc_gap = max(acc_gap, abs(mine["eval_accuracy"] - ddp["eval_accuracy"]))
    ok = step_rel <= LOSS_RTOL and eval_rel <= LOSS_RTOL and acc_gap <= ACCURACY_ATOL
    return {"step_loss_rel": step_rel, "eval_loss_rel": eval_rel, "accuracy_gap": acc_gap,
            "ok": ok}


def model_table(model: str, runs: dict[str, list[dict]]) -> list[str]:
    runners = [r for r in RUNNERS if runs.get(r)]
    median = {r: statistics.median(x["samples_per_s"] for x in runs[r]) for r in runners}
    lines = [
        f"#### {model}",
        "",
        "| median (min..max) over rounds | " + " | ".join(LABELS[r] for r in runners) + " |",
        "| --- |" + " --- |" * len(runners),
    ]

    def row(label: str, key: str, fmt: str) -> str:
        return f"| {label} | " + " | ".join(
            spread([x[key] for x in runs[r]], fmt) for r in runners) + " |"

    lines += [
        row("samples/s (from the median step)", "samples_per_s", "{:.0f}"),
        "| samples/s vs DDP | " + " | ".join(
            f"{median[r] / median['ddp']:.3f}" if "ddp" in median else "-" for r in runners) + " |",
        "| stability: CV of samples/s | " + " | ".join(
            f"{cv_percent([x['samples_per_s'] for x in runs[r]]):.1f}%" for r in runners) + " |",
        row("samples/s (whole timed run)", "samples_per_s_whole_run", "{:.0f}"),
        row("peak RSS per rank, MiB", "peak_rss_mib", "{:.0f}"),
        row("CPU time per step per rank, ms", "cpu_ms_per_step", "{:.1f}"),
        row("final training loss", "final_loss", "{:.4f}"),
        row("held-out loss", "eval_loss", "{:.4f}"),
        row("held-out accuracy", "eval_accuracy", "{:.4f}"),
        "",
    ]
    if "kolo" in median and "ddp" in median:
        lines.append(f"kolo/DDP {median['kolo'] / median['ddp']:.3f} (target >= 1.2)")
    if "kolo" in median and "kolo-mpi" in median:
        lines[-1] += f"; kolo/kolo-mpi {median['kolo'] / median['kolo-mpi']:.3f} (target >= 1.0)"
    if "kolo" in median and "horovod" in median:
        lines.append(f"kolo/Horovod 0.28.1 {median['kolo'] / median['horovod']:.3f} samples/s")
    if "local" in median and "ddp" in median:
        lines.append(f"ceiling/DDP {median['local'] / median['ddp']:.3f} (what dropping all "
                     "communication gains over DDP on these cores); kolo reaches "
                     + (f"{median['kolo'] / median['local']:.3f}" if "kolo" in median else "-")
                     + " of the ceiling, DDP "
                     + f"{median['ddp'] / median['local']:.3f}")
    if "lockstep" in median and "ddp" in median:
        lines.append(f"lockstep/DDP {median['lockstep'] / median['ddp']:.3f} (the most a "
                     "synchronous library can gain over DDP here: every step waits for the slower "
                     "rank, no gradient is exchanged); kolo reaches "
                     + (f"{median['kolo'] / median['lockstep']:.3f}" if "kolo" in median else "-")
                     + " of it, DDP " + f"{median['ddp'] / median['lockstep']:.3f}")
    for runner in ("kolo", "kolo-mpi", "horovod"):
        if runs.get(runner) and runs.get("ddp"):
            c = convergence(runs, runner)
            lines.append(
                f"convergence {runner} vs DDP: {'MATCH' if c['ok'] else 'MISMATCH'} (largest "
                f"step-loss difference {100 * c['step_loss_rel']:.4f}%, held-out loss "
                f"{100 * c['eval_loss_rel']:.4f}% (tolerance {100 * LOSS_RTOL:.0f}%), accuracy "
                f"gap {c['accuracy_gap']:.4f} (tolerance {ACCURACY_ATOL}))")
    return lines


def overlap_line(model: str, figures: dict) -> str:
    return (f"| {model} | {100 * figures['overlap_fraction']:.0f}% | {figures['comm_ms']:.2f} | "
            f"{figures['backward_ms']:.2f} | {figures['step_wait_ms']:.2f} | "
            f"{figures['groups_per_step']:.0f} |")


def markdown(runs: dict[str, dict[str, list[dict]]], overlaps: dict[str, dict]) -> str:
    lines: list[str] = []
    for model, model_runs in runs.items():
        for r in model_runs.values():
            for x in r:
                x.setdefault("final_loss", x["losses"][-1])
        lines += model_table(model, model_runs) + [""]
    if overlaps:
        lines += [
            "Backward/communication overlap (kolo, one run with the timeline, rank 0, medians per "
            "step):",
            "",
            "| model | allreduce time overlapping backward | allreduce ms | backward ms | "
            "step() wait ms | fused allreduces per step |",
            "| --- | --- | --- | --- | --- | --- |",
            *(overlap_line(m, f) for m, f in overlaps.items()),
            "",
        ]
    return "\n".join(lines)


def plot(runs: dict[str, dict[str, list[dict]]], path: Path) -> str:
    """Writes the PNG: per model, samples/s of every round per runner, and the loss per step
    (round 1) of kolo against DDP. Returns what happened, for the report."""
    try:
        import matplotlib
    except ImportError:
        return "no plot: matplotlib is not installed (pip install matplotlib)"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 2, figsize=(11, 3.2 * len(runs)), squeeze=False)
    for (model, model_runs), (speed, loss) in zip(runs.items(), axes):
        runners = [r for r in RUNNERS if model_runs.get(r)]
        for i, runner in enumerate(runners):
            values = [x["samples_per_s"] for x in model_runs[runner]]
            speed.scatter([i] * len(values), values, alpha=0.6)
            speed.hlines(statistics.median(values), i - 0.3, i + 0.3, color="black")
        speed.set_xticks(range(len(runners)), [SHORT[r] for r in runners], fontsize=9)
        speed.set_ylabel("samples/s")
        speed.set_title(f"{model}: samples/s per round (bar: median)", fontsize=10)
        for runner, style in (("ddp", "-"), ("kolo", "--"), ("kolo-mpi", ":"),
                              ("horovod", "-.")):  # not local nor lockstep
            if model_runs.get(runner):
                loss.plot(model_runs[runner][0]["losses"], style, label=LABELS[runner])
        loss.set_xlabel("step")
        loss.set_ylabel("training loss (rank 0)")
        loss.set_title(f"{model}: loss vs step, same seed", fontsize=10)
        loss.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return f"plot: {path}"
