#!/usr/bin/env python3
"""kolo vs torch.distributed (gloo) vs OpenMPI, every collective, on this machine, in one command.

    python3 bench/compare/compare.py --np 2 --rounds 5 -b 8 -e 256M -f 8 --plot np2.png
    python3 bench/compare/compare.py --np 3 -t allgather,alltoall --sizes 4K,256K
    # before/after: a second kolo build (OLD: its build directory) as one more peer
    python3 bench/compare/compare.py --sizes 8,256K,64M --baseline-kolorun OLD/kolorun
        --baseline-kolo-bench OLD/kolo-bench

Collectives (-t, default all five): allreduce, allgather, broadcast, reducescatter, alltoall,
float32 (sum where they reduce). The peers: kolo-bench under kolorun (kolo's algorithms on the
communicator the runtime uses: shared memory between ranks of a host), gloo_collectives.py
(torch.distributed with gloo: all_reduce, all_gather_single, broadcast, reduce_scatter_single,
all_to_all_single; gloo on CPU has all five), and mpi_collectives.c (MPI_Allreduce in place,
MPI_Allgather, MPI_Bcast, MPI_Reduce_scatter_block, MPI_Alltoall), built here with mpicc and run
by Debian's OpenMPI with the shared-memory btl "vader".

Sizes, the same in every peer (nccl-tests' definitions): the whole buffer; allgather: the gathered
output; reducescatter: the input; alltoall: one rank's send buffer. Per-rank collectives round it
down to whole float32 elements per rank, at least one (so 8 B at np 3 is 12 B). Bus bandwidth
(busbw) = size / time x factor: 2(n-1)/n for allreduce, (n-1)/n for allgather, reducescatter and
alltoall, 1 for broadcast. Each peer checks its first run at every size against the expected
result (small integers, exact in float32) and reports wrong elements; a size where any peer was
wrong is flagged in the table.

Ranks are pinned one per core for all peers when np <= cores (mpirun's default binding; kolorun
and the gloo script get `taskset`), or none when oversubscribed or with --no-bind. Pinned, kolo
also runs as users launch it, a plain `kolorun -np N kolo-bench` with kolo's own placement
(docs/guide/placement.md): the peer "plain", with its own plain/mpi ratio. Each round
runs the peers in turn (interleaved, so a noisy neighbour hurts all alike); the table shows each
size's median over rounds: latency (us), busbw (GB/s) and the kolo/peer busbw ratios; "<goal"
marks where kolo/mpi is below the goal (1.2 at np <= cores, 1.0 oversubscribed). Sizes up to
64 KiB run --small-iters iterations (default 10000: a run of sub-microsecond operations must be
long enough that the ranks' skew at the start and a preemption by a neighbour do not decide it),
sizes to 16 MiB -n (100), and sizes above run --large-iters iterations (default 5, one warm-up) so
that 256 MiB stays affordable.
--plot FILE writes a PNG of busbw vs size per peer, one panel per collective (needs matplotlib:
`pip install matplotlib`; without it the plot is skipped with a message).
With --baseline-kolorun/--baseline-kolo-bench a second kolo build (e.g. an older commit's) runs as
one more peer, "base", interleaved the same way: a before/after comparison of a change.
--sizes runs exactly the sizes listed (each its own short run) instead of -b/-e/-f's range.
The real Horovod 0.28.1 has no C++ layer to time apart from its front end: torch_level.py in this
folder compares it with kolo at the horovod.torch level instead (a table of its own).
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
COLLECTIVES = ["allreduce", "allgather", "broadcast", "reducescatter", "alltoall"]
SIZE_MEANING = {"allreduce": "buffer", "allgather": "gathered output", "broadcast": "buffer",
                "reducescatter": "input", "alltoall": "one rank's send buffer"}
SMALL_BYTES = 64 << 10  # up to this, --small-iters iterations
LARGE_BYTES = 16 << 20  # above this, --large-iters iterations

# (collective, bytes) -> (time us, wrong elements)
Rows = dict[tuple[str, int], tuple[float, int]]


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def bus_factor(collective: str, ranks: int) -> float:
    if collective == "allreduce":
        return 2 * (ranks - 1) / ranks
    return 1.0 if collective == "broadcast" else (ranks - 1) / ranks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def table_rows(text: str) -> Rows:
    """Rows from "collective bytes time_us wrong" lines or kolo-bench's sections and rows."""
    rows: Rows = {}
    section = ""
    for line in text.splitlines():
        line = line.split(">:", 1)[-1] if line.startswith("[") else line  # kolorun's rank tag
        fields = line.split()
        if len(fields) == 2 and fields[0] == "#" and fields[1] in COLLECTIVES:
            section = fields[1]  # kolo-bench: "# allgather" opens that collective's rows
        elif not fields or fields[0].startswith("#"):
            continue
        elif len(fields) == 4 and fields[0] in COLLECTIVES:
            rows[(fields[0], int(fields[1]))] = (float(fields[2]), int(fields[3]))
        elif len(fields) >= 8 and fields[0].isdigit() and section:
            wrong = int(fields[7]) if fields[7].isdigit() else 0
            rows[(section, int(fields[0]))] = (float(fields[4]), wrong)
        elif "unsupported:" in line:
            print(f"# gloo: {line.strip()}", file=sys.stderr)
    return rows


def run(command: list[str], env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                           f"{done.stderr}")
    return done.stdout


def pinned(args: argparse.Namespace) -> bool:
    """One core per rank, as mpirun binds by default when there are enough cores."""
    return args.bind and args.np <= (os.cpu_count() or 1)


class Range:
    """One launch of a peer: sizes MIN..MAX times FACTOR, with its iteration counts."""

    def __init__(self, first: int, last: int, factor: int, iters: int, warmup: int):
        self.sizes = [str(first), str(last), str(factor)]
        self.iters, self.warmup = iters, warmup

    def tail(self, most: int | None = None) -> list[str]:
        iters = min(self.iters, most) if most else self.iters
        return [*self.sizes, str(iters), str(min(self.warmup, iters))]


def ranges_of(args: argparse.Namespace) -> list[Range]:
    """The launches: sizes up to SMALL_BYTES with --small-iters iterations, up to LARGE_BYTES
    with -n, above with --large-iters."""
    def iters(size: int) -> tuple[int, int]:
        if size <= SMALL_BYTES:
            return args.small_iters, max(args.warmup, args.small_iters // 10)
        return (args.iters, args.warmup) if size <= LARGE_BYTES else (args.large_iters, 1)

    if args.sizes:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
        return [Range(s, s, 2, *iters(s)) for s in sizes]
    first, last, factor = parse_size(args.b), parse_size(args.e), int(args.f)
    series = []
    size = first
    while size <= last:
        series.append(size)
        size = last + 1 if size == last else min(size * factor, last)
    parts = [[s for s in series if s <= SMALL_BYTES],
             [s for s in series if SMALL_BYTES < s <= LARGE_BYTES],
             [s for s in series if s > LARGE_BYTES]]
    return [Range(part[0], part[-1], factor, *iters(part[-1])) for part in parts if part]


def run_kolo(args: argparse.Namespace, part: Range, kolorun: str | None = None,
             kolo_bench: str | None = None, pin: bool = True) -> Rows:
    """kolo-bench under kolorun; pinned with taskset unless `pin` is False (the plain launch)."""
    bench = [kolo_bench or args.kolo_bench, "-t", ",".join(args.collectives),
             "-b", part.sizes[0], "-e", part.sizes[1], "-f", part.sizes[2],
             "-n", str(part.iters), "-w", str(part.warmup), "-d", "float", "-o", "sum"]
    if pin and pinned(args):  # each rank on the core numbered like its rank
        bench = ["bash", "-c", 'exec taskset -c "$KOLO_RANK" "$@"', "kolo-bench", *bench]
    return table_rows(run([kolorun or args.kolorun, "-np", str(args.np), *bench]))


def run_gloo(args: argparse.Namespace, part: Range) -> Rows:
    port = free_port()
    procs = []
    for rank in range(args.np):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.np), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        # gloo takes hundreds of microseconds even for 8 bytes: -n iterations at most suffice.
        command = [sys.executable, str(HERE / "gloo_collectives.py"), ",".join(args.collectives),
                   *part.tail(args.iters)]
        if pinned(args):
            command = ["taskset", "-c", str(rank), *command]
        procs.append(subprocess.Popen(command, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=1800) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"gloo rank failed ({p.returncode}):\n{out}\n{err}")
    return table_rows(outputs[0][0])


def run_mpi(args: argparse.Namespace, binary: Path, part: Range) -> Rows:
    command = ["mpirun", "-np", str(args.np), "--mca", "btl", "self,vader",
               "--bind-to", "core" if pinned(args) else "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    if args.np > (os.cpu_count() or 1):
        command.append("--oversubscribe")
    return table_rows(run(command + [str(binary), ",".join(args.collectives), *part.tail()]))


def build_mpi(directory: Path) -> Path:
    if shutil.which("mpicc") is None:
        sys.exit("compare: mpicc not found (apt-get install openmpi-bin libopenmpi-dev)")
    binary = directory / "mpi_collectives"
    run(["mpicc", "-O2", "-o", str(binary), str(HERE / "mpi_collectives.c")])
    return binary


def write_plot(path: str, args: argparse.Namespace, peers: list[str],
               median_us, sizes: dict[str, list[int]]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"# --plot {path}: skipped, matplotlib is not installed (pip install matplotlib)")
        return
    columns = min(3, len(args.collectives))
    rows = (len(args.collectives) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for index, collective in enumerate(args.collectives):
        axis = axes[index // columns][index % columns]
        for peer in peers:
            points = [(size, size / (us * 1e-6) / 1e9 * bus_factor(collective, args.np))
                      for size in sizes[collective]
                      if (us := median_us(peer, collective, size)) is not None and us > 0]
            if points:
                axis.plot(*zip(*points), marker="o", markersize=3, label=peer)
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_title(f"{collective} (size: {SIZE_MEANING[collective]})", fontsize=10)
        axis.set_xlabel("bytes")
        axis.set_ylabel("busbw GB/s")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    for index in range(len(args.collectives), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle(f"np {args.np}, {'pinned' if pinned(args) else 'not pinned'}, float32, "
                    f"medians of {args.rounds} interleaved rounds")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"# plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-t", "--collectives", default=",".join(COLLECTIVES),
                        help="comma list (default all five)")
    parser.add_argument("-b", default="8")
    parser.add_argument("-e", default="256M")
    parser.add_argument("-f", default="8")
    parser.add_argument("-n", "--iters", type=int, default=100)
    parser.add_argument("-w", "--warmup", type=int, default=10)
    parser.add_argument("--small-iters", type=int, default=10000,
                        help=f"iterations up to {SMALL_BYTES >> 10} KiB (a tenth as warm-up; gloo: "
                             "-n at most)")
    parser.add_argument("--large-iters", type=int, default=5,
                        help=f"iterations for sizes above {LARGE_BYTES >> 20} MiB (one warm-up)")
    parser.add_argument("--kolorun", default=shutil.which("kolorun") or "kolorun")
    parser.add_argument("--kolo-bench", default=shutil.which("kolo-bench") or "kolo-bench")
    parser.add_argument("--no-bind", dest="bind", action="store_false",
                        help="do not pin ranks to cores (default: pin all peers alike when "
                             "np <= cores)")
    parser.add_argument("--skip", default="",
                        help="comma list of peers to leave out: gloo,mpi,plain")
    parser.add_argument("--sizes", default="",
                        help="comma list of exact sizes (e.g. 8,256K,64M) instead of -b/-e/-f")
    parser.add_argument("--plot", default="", help="write a PNG of busbw vs size to this file")
    parser.add_argument("--baseline-kolorun", default="",
                        help="kolorun of a second kolo build, run as the peer 'base'")
    parser.add_argument("--baseline-kolo-bench", default="",
                        help="kolo-bench of that second build")
    args = parser.parse_args()
    if bool(args.baseline_kolorun) != bool(args.baseline_kolo_bench):
        parser.error("--baseline-kolorun and --baseline-kolo-bench go together")
    args.collectives = [c for c in args.collectives.split(",") if c]
    unknown = [c for c in args.collectives if c not in COLLECTIVES]
    if unknown or not args.collectives:
        parser.error(f"unknown collective(s) {', '.join(unknown)}: -t takes a comma list of "
                     f"{', '.join(COLLECTIVES)}")
    ranges = ranges_of(args)
    skip = set(filter(None, args.skip.split(",")))

    def each_range(measure) -> Rows:
        rows: Rows = {}
        for part in ranges:
            rows.update(measure(part))
        return rows

    plain = pinned(args) and "plain" not in skip  # else the kolo column is the plain launch
    peers = ["kolo"] + (["plain"] if plain else []) \
        + (["base"] if args.baseline_kolorun else []) \
        + [peer for peer in ("gloo", "mpi") if peer not in skip]
    results: dict[str, list[Rows]] = {peer: [] for peer in peers}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        mpi_binary = build_mpi(Path(scratch)) if "mpi" in peers else None
        for round_ in range(args.rounds):
            print(f"# round {round_ + 1}/{args.rounds}", file=sys.stderr, flush=True)
            results["kolo"].append(each_range(lambda part: run_kolo(args, part)))
            if "plain" in results:
                results["plain"].append(each_range(lambda part: run_kolo(args, part, pin=False)))
            if "base" in results:
                results["base"].append(each_range(lambda part: run_kolo(
                    args, part, args.baseline_kolorun, args.baseline_kolo_bench)))
            if "gloo" in results:
                results["gloo"].append(each_range(lambda part: run_gloo(args, part)))
            if mpi_binary is not None:
                results["mpi"].append(each_range(
                    lambda part: run_mpi(args, mpi_binary, part)))
    load_after = os.getloadavg()

    def median_us(peer: str, collective: str, size: int) -> float | None:
        values = [r[(collective, size)][0] for r in results[peer] if (collective, size) in r]
        return statistics.median(values) if values else None

    def wrong(peer: str, collective: str, size: int) -> int:
        return sum(r[(collective, size)][1] for r in results[peer] if (collective, size) in r)

    def text(value: float | None, form: str) -> str:
        return format(value, form) if value is not None else "-"

    goal = 1.2 if pinned(args) else 1.0
    others = [peer for peer in peers if peer not in ("kolo", "plain")]
    print(f"# float32, np {args.np}, medians of {args.rounds} interleaved rounds (iterations "
          f"and warm-up: up to {SMALL_BYTES >> 10} KiB {args.small_iters} and "
          f"{max(args.warmup, args.small_iters // 10)} (gloo {args.iters}), to "
          f"{LARGE_BYTES >> 20} MiB {args.iters} and {args.warmup}, above {args.large_iters} and 1)"
          f", ranks "
          f"{'pinned one per core' if pinned(args) else 'not pinned'}; load average (1 min) "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    sizes: dict[str, list[int]] = {}
    for collective in args.collectives:
        sizes[collective] = sorted({size for rows in results["kolo"] for c, size in rows
                                    if c == collective})
        factor = bus_factor(collective, args.np)
        print(f"#\n# {collective} (size: {SIZE_MEANING[collective]}; busbw = size/time x "
              f"{factor:.3g})")
        print(f"#{'size':>11} " + " ".join(f"{peer + ' us':>10}" for peer in peers) + " "
              + " ".join(f"{peer + ' GB/s':>10}" for peer in peers) + " "
              + " ".join(f"{'kolo/' + peer:>10}" for peer in others)
              + (f" {'plain/mpi':>10}" if "plain" in peers and "mpi" in peers else ""))
        for size in sizes[collective]:
            us = {peer: median_us(peer, collective, size) for peer in peers}
            bw = {peer: size / (us[peer] * 1e-6) / 1e9 * factor if us[peer] else None
                  for peer in peers}
            ratio = {peer: (bw["kolo"] / bw[peer]) if bw["kolo"] and bw[peer] else None
                     for peer in others}
            plain_ratio = []
            if "plain" in peers and "mpi" in peers:
                plain_ratio = [bw["plain"] / bw["mpi"] if bw["plain"] and bw["mpi"] else None]
            notes = []
            if ratio.get("mpi") is not None and ratio["mpi"] < goal:
                notes.append("<goal")
            if plain_ratio and plain_ratio[0] is not None and plain_ratio[0] < goal:
                notes.append("plain<goal")
            bad = [peer for peer in peers if wrong(peer, collective, size)]
            if bad:
                notes.append("WRONG: " + ",".join(bad))
            print(f" {size:>11} " + " ".join(text(us[peer], "10.1f") for peer in peers) + " "
                  + " ".join(text(bw[peer], "10.3f") for peer in peers) + " "
                  + " ".join(text(ratio[peer], "10.2f") for peer in others)
                  + "".join(" " + text(value, "10.2f") for value in plain_ratio)
                  + ("  " + " ".join(notes) if notes else ""))
    if args.plot:
        write_plot(args.plot, args, peers, median_us, sizes)


if __name__ == "__main__":
    main()
