"""The projections of run.py and run_collectives.py as PNGs beside their tables: predicted time
against rank count, one line per algorithm, kolo's pick marked (black rings), on 25 and 100 Gb/s.
matplotlib is optional, as in bench/compare and bench/train_vs_ddp: without it the plot is
skipped with a line that says so. Pure model arithmetic: the same figures as the tables."""

from __future__ import annotations

import math
import os
from pathlib import Path

import collective_steps as steps
import model
import project

# 8..256 at powers of two and halfway between (non-powers of two show their extra ranks' cost).
PLOT_RANKS = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
ALLREDUCE_WORKLOADS = project.WORKLOADS[:2]  # ResNet-50 and 1 B parameters, fp32
BROADCAST_SIZES = (1 << 20, 16 << 20, 25_557_032 * 4)
ALLGATHER_SIZES = (8 << 10, 512 << 10, 16 << 20)
ALLREDUCE_LABELS = {"ring": "ring", "recursive_doubling": "recursive doubling",
                    "halving_doubling": "halving-doubling",
                    "tree": "double binary tree (not in kolo)", "ring_2d": "2-D ring (not in kolo)",
                    "hierarchical": "hierarchical, 8 ranks per host"}
COLLECTIVE_LABELS = {"tree": "binomial tree", "scatter_allgather": "scatter + allgather",
                     "chain": "pipelined chain", "ring": "ring", "doubling": "recursive doubling",
                     "bruck": "Bruck"}


def _pyplot():
    """matplotlib.pyplot with the file backend, or None when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: PLC0415 (optional)
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _panel(axis, title: str, curves: dict[str, list[float]], kolo: list[float],
           labels: dict[str, str]) -> None:
    for name, times in curves.items():
        axis.plot(PLOT_RANKS, times, marker=".", label=labels[name])
    axis.plot(PLOT_RANKS, kolo, linestyle="none", marker="o", markersize=9, markerfacecolor="none",
              markeredgecolor="black", label="kolo's pick")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xticks(PLOT_RANKS[::2], [str(p) for p in PLOT_RANKS[::2]])
    axis.set_title(title, fontsize=10)
    axis.set_xlabel("ranks (one per host)")
    axis.set_ylabel("predicted seconds")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)


def _save(plt, figure, path: Path, heading: str) -> str:
    figure.suptitle(heading, fontsize=11)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return f"# plot: {os.path.relpath(path)}"


def allreduce(path: Path, network: model.Link, local: model.Link) -> str:
    """Per step's gradients (fused in 128 MiB buffers) of ResNet-50 and a 1 B-parameter model:
    every flat algorithm, the hierarchical one, and kolo's flat pick. Returns the line to print."""
    plt = _pyplot()
    if plt is None:
        return f"# plot {path}: skipped, matplotlib is not installed (pip install matplotlib)"
    figure, axes = plt.subplots(len(project.RATES_GBIT), len(ALLREDUCE_WORKLOADS),
                                figsize=(6 * len(ALLREDUCE_WORKLOADS), 4.3 * 2), squeeze=False)
    for row, rate in zip(axes, project.RATES_GBIT):
        link = model.link_for_network(rate, network.alpha + project.HOP_ALPHA, local.gamma)
        for axis, (name, total, element) in zip(row, ALLREDUCE_WORKLOADS):
            buffers = project.buffers(total)
            curves = {algorithm: [sum(model.flat_time(algorithm, p, n, link) for n in buffers)
                                  for p in PLOT_RANKS] for algorithm in model.FLAT}
            curves["hierarchical"] = [  # whole hosts of 8 only (a gap elsewhere)
                sum(model.hierarchical_time(p, project.PER_HOST, n, link, local, element)
                    for n in buffers) if p > project.PER_HOST and p % project.PER_HOST == 0
                else math.nan for p in PLOT_RANKS]
            kolo = [sum(project.flat_choice(p, n, link, element)[1] for n in buffers)
                    for p in PLOT_RANKS]
            _panel(axis, f"allreduce, {name} ({project.fmt_bytes(total)}), {rate} Gb/s",
                   curves, kolo, ALLREDUCE_LABELS)
    return _save(plt, figure, path, "kolo's allreduce past this machine: the alpha-beta-gamma "
                 "model (bench/scaling, bench/SCALING.md)")


def collectives(path: Path, network: model.Link) -> str:
    """Broadcast and allgather at a few sizes: every algorithm of collective_steps.py and kolo's
    pick. Returns the line to print."""
    plt = _pyplot()
    if plt is None:
        return f"# plot {path}: skipped, matplotlib is not installed (pip install matplotlib)"
    rows = [(rate, collective, sizes) for rate in project.RATES_GBIT
            for collective, sizes in (("broadcast", BROADCAST_SIZES),
                                      ("allgather", ALLGATHER_SIZES))]
    figure, axes = plt.subplots(len(rows), 3, figsize=(15, 4.3 * len(rows)), squeeze=False)
    for row, (rate, collective, sizes) in zip(axes, rows):
        link = model.link_for_network(rate, network.alpha + project.HOP_ALPHA, 0.0)
        for axis, n in zip(row, sizes):
            algorithms = steps.ALGORITHMS[collective]
            curves = {name: [link.time(of(p, n), n) for p in PLOT_RANKS]
                      for name, of in algorithms.items()}
            kolo = [link.time(algorithms[steps.kolo_pick(collective, p, n)](p, n), n)
                    for p in PLOT_RANKS]
            _panel(axis, f"{collective} {project.fmt_bytes(n)}, {rate} Gb/s", curves, kolo,
                   COLLECTIVE_LABELS)
    return _save(plt, figure, path, "kolo's broadcast (size: the buffer) and allgather (size: the "
                 "whole output) past this machine: the alpha-beta model")
