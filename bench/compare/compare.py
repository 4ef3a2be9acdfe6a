#!/usr/bin/env python3
"""kolo vs torch.distributed (gloo) vs OpenMPI allreduce on this machine, in one command.

    python3 bench/compare/compare.py --np 2 --rounds 5 -b 8 -e 64M -f 8
    python3 bench/compare/compare.py --sizes 8,256K,64M \
        --baseline-kolorun OLD/kolorun --baseline-kolo-bench OLD/kolo-bench   # before/after

Ranks are pinned one per core for all three when np <= cores (mpirun's default binding; kolorun
and the gloo script get `taskset`), or none when oversubscribed or with --no-bind.
Each round runs the three in turn (interleaved, so a noisy neighbour hurts all alike): kolo-bench
under kolorun, a gloo script (one process per rank, rendezvous on loopback), and MPI_Allreduce
from a small C program built here with mpicc (Debian's openmpi-bin; shared-memory btl "vader").
The table shows each size's median over rounds: latency (us), busbw (GB/s, nccl-tests'
definition 2(n-1)/n * bytes / time) and the kolo/gloo and kolo/MPI busbw ratios.
With --baseline-kolorun/--baseline-kolo-bench a second kolo build (e.g. an older commit's) runs as
one more peer, "base", interleaved the same way: a before/after comparison of a change.
--sizes runs exactly the sizes listed (each its own short run) instead of -b/-e/-f's range.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def table_rows(text: str) -> dict[int, float]:
    """bytes -> time (us) from "bytes time_us" lines or kolo-bench's table rows."""
    rows: dict[int, float] = {}
    for line in text.splitlines():
        line = line.split(">:", 1)[-1] if line.startswith("[") else line  # kolorun's rank tag
        fields = line.split()
        if not fields or line.lstrip().startswith("#"):
            continue
        if len(fields) == 2:
            rows[int(fields[0])] = float(fields[1])
        elif len(fields) >= 8 and fields[0].isdigit():
            rows[int(fields[0])] = float(fields[4])
    return rows


def run(command: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                           f"{done.stderr}")
    return done.stdout


def pinned(args: argparse.Namespace) -> bool:
    """One core per rank, as mpirun binds by default when there are enough cores."""
    return args.bind and args.np <= (os.cpu_count() or 1)


def run_kolo(args: argparse.Namespace, sizes: list[str], kolorun: str | None = None,
             kolo_bench: str | None = None) -> dict[int, float]:
    bench = [kolo_bench or args.kolo_bench, "-t", "allreduce",
             "-b", sizes[0], "-e", sizes[1], "-f", sizes[2],
             "-n", str(args.iters), "-w", str(args.warmup), "-d", "float", "-o", "sum"]
    if pinned(args):  # kolorun does not bind: pin each rank to the core numbered like its rank
        bench = ["bash", "-c", 'exec taskset -c "$KOLO_RANK" "$@"', "kolo-bench", *bench]
    return table_rows(run([kolorun or args.kolorun, "-np", str(args.np), *bench]))


def run_gloo(args: argparse.Namespace, sizes: list[str]) -> dict[int, float]:
    port = free_port()
    procs = []
    for rank in range(args.np):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.np), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        command = [sys.executable, str(HERE / "gloo_allreduce.py"), *sizes, str(args.iters),
                   str(args.warmup)]
        if pinned(args):
            command = ["taskset", "-c", str(rank), *command]
        procs.append(subprocess.Popen(command, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"gloo rank failed ({p.returncode}):\n{out}\n{err}")
    return table_rows(outputs[0][0])


def run_mpi(args: argparse.Namespace, binary: Path, sizes: list[str]) -> dict[int, float]:
    command = ["mpirun", "-np", str(args.np), "--mca", "btl", "self,vader",
               "--bind-to", "core" if pinned(args) else "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    if args.np > (os.cpu_count() or 1):
        command.append("--oversubscribe")
    return table_rows(run(command + [str(binary), *sizes, str(args.iters), str(args.warmup)]))


def build_mpi(directory: Path) -> Path:
    if shutil.which("mpicc") is None:
        sys.exit("compare: mpicc not found (apt-get install openmpi-bin libopenmpi-dev)")
    binary = directory / "mpi_allreduce"
    run(["mpicc", "-O2", "-o", str(binary), str(HERE / "mpi_allreduce.c")])
    return binary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-b", default="8")
    parser.add_argument("-e", default="64M")
    parser.add_argument("-f", default="8")
    parser.add_argument("-n", "--iters", type=int, default=100)
    parser.add_argument("-w", "--warmup", type=int, default=10)
    parser.add_argument("--kolorun", default=shutil.which("kolorun") or "kolorun")
    parser.add_argument("--kolo-bench", default=shutil.which("kolo-bench") or "kolo-bench")
    parser.add_argument("--no-bind", dest="bind", action="store_false",
                        help="do not pin ranks to cores (default: pin all three alike when "
                             "np <= cores)")
    parser.add_argument("--skip", default="", help="comma list of peers to leave out: gloo,mpi")
    parser.add_argument("--sizes", default="",
                        help="comma list of exact sizes (e.g. 8,256K,64M) instead of -b/-e/-f")
    parser.add_argument("--baseline-kolorun", default="",
                        help="kolorun of a second kolo build, run as the peer 'base'")
    parser.add_argument("--baseline-kolo-bench", default="",
                        help="kolo-bench of that second build")
    args = parser.parse_args()
    if bool(args.baseline_kolorun) != bool(args.baseline_kolo_bench):
        parser.error("--baseline-kolorun and --baseline-kolo-bench go together")
    if args.sizes:
        ranges = [[str(parse_size(s))] * 2 + ["2"] for s in args.sizes.split(",")]
    else:
        ranges = [[str(parse_size(args.b)), str(parse_size(args.e)), args.f]]
    skip = set(filter(None, args.skip.split(",")))

    def each_range(measure) -> dict[int, float]:
        rows: dict[int, float] = {}
        for sizes in ranges:
            rows.update(measure(sizes))
        return rows

    peers = ["kolo", "gloo", "mpi"] + (["base"] if args.baseline_kolorun else [])
    results: dict[str, list[dict[int, float]]] = {peer: [] for peer in peers}
    with tempfile.TemporaryDirectory() as scratch:
        mpi_binary = build_mpi(Path(scratch)) if "mpi" not in skip else None
        for round_ in range(args.rounds):
            print(f"# round {round_ + 1}/{args.rounds}", file=sys.stderr, flush=True)
            results["kolo"].append(each_range(lambda sizes: run_kolo(args, sizes)))
            if "base" in results:
                results["base"].append(each_range(lambda sizes: run_kolo(
                    args, sizes, args.baseline_kolorun, args.baseline_kolo_bench)))
            if "gloo" not in skip:
                results["gloo"].append(each_range(lambda sizes: run_gloo(args, sizes)))
            if mpi_binary is not None:
                results["mpi"].append(each_range(lambda sizes: run_mpi(args, mpi_binary, sizes)))

    def median_us(peer: str, size: int) -> float | None:
        values = [r[size] for r in results[peer] if size in r]
        return statistics.median(values) if values else None

    def busbw(size: int, us: float | None) -> float | None:
        if us is None or us <= 0:
            return None
        return size / (us * 1e-6) / 1e9 * 2 * (args.np - 1) / args.np

    def text(value: float | None, form: str) -> str:
        return format(value, form) if value is not None else "-"

    print(f"# allreduce float32 sum, np {args.np}, medians of {args.rounds} interleaved rounds "
          f"({args.iters} iterations, {args.warmup} warm-up each), ranks "
          f"{'pinned one per core' if pinned(args) else 'not pinned'}; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    others = [peer for peer in peers if peer != "kolo"]
    print(f"#{'size':>11} " + " ".join(f"{peer + ' us':>10}" for peer in peers) + " "
          + " ".join(f"{peer + ' GB/s':>10}" for peer in peers) + " "
          + " ".join(f"{'kolo/' + peer:>10}" for peer in others))
    for size in sorted(results["kolo"][0]):
        us = {peer: median_us(peer, size) for peer in results}
        bw = {peer: busbw(size, us[peer]) for peer in results}
        ratio = {peer: (bw["kolo"] / bw[peer]) if bw["kolo"] and bw[peer] else None
                 for peer in others}
        print(f" {size:>11} " + " ".join(text(us[peer], "10.1f") for peer in peers) + " "
              + " ".join(text(bw[peer], "10.3f") for peer in peers) + " "
              + " ".join(text(ratio[peer], "10.2f") for peer in others))


if __name__ == "__main__":
    main()
