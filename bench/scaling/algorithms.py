"""Halving-doubling against the ring and recursive doubling, measured: kolo-bench with each
allreduce algorithm forced (-a) over loopback TCP (KOLO_SHM_DISABLE=1, as run.py's "tcp"
transport), np 2..4, every configuration once per round so a slow phase of a shared machine
spreads over all of them. Prints per np and size the median time of each algorithm over the
rounds and halving-doubling's speed relative to the other two (> 1: halving-doubling faster).

    flock /work/wt/bench.lock python3 bench/scaling/algorithms.py [--rounds 3] [--np 2,3,4]

At np 2 the three algorithms differ only in how they cut the buffer (one exchange of all of it
against two of half); np 3 and 4 oversubscribe a 2-core machine, so there the figures only
indicate.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import measure

ALGORITHMS = ("ring", "recursive_doubling", "halving_doubling")
SHORT = {"ring": "ring", "recursive_doubling": "RD", "halving_doubling": "HD"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--np", default="2,3,4", help="comma-separated rank counts")
    parser.add_argument("--max-bytes", default="64M")
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    sweep = measure.Sweep(max_bytes=args.max_bytes, iterations=args.iterations)
    env = dict(os.environ, OMP_NUM_THREADS="1", KOLO_SHM_DISABLE="1")
    cases = [measure.Case("tcp", int(np_), algorithm)
             for np_ in args.np.split(",") for algorithm in ALGORITHMS]

    print(f"# load before: {Path('/proc/loadavg').read_text().strip()}  cpus: {os.cpu_count()}")
    for round_ in range(args.rounds):
        for case in cases:
            start = time.monotonic()
            measure.run_case(case, sweep, env)
            print(f"# round {round_ + 1}/{args.rounds}: {case.label()} "
                  f"({time.monotonic() - start:.1f} s)", flush=True)
    print(f"# load after: {Path('/proc/loadavg').read_text().strip()}")

    for np_ in sorted({case.np for case in cases}):
        medians = {case.algorithm: case.medians() for case in cases if case.np == np_}
        print(f"\n## np {np_}, loopback TCP: median us over {args.rounds} rounds\n")
        print("| bytes | " + " | ".join(SHORT[a] for a in ALGORITHMS)
              + " | HD vs ring | HD vs RD | HD busbw GB/s |")
        print("|---" * (len(ALGORITHMS) + 4) + "|")
        for n in medians["halving_doubling"]:
            times = [medians[a][n] for a in ALGORITHMS]
            hd = medians["halving_doubling"][n]
            busbw = n * 2 * (np_ - 1) / np_ / hd / 1e9
            ratios = [medians[a][n] / hd for a in ("ring", "recursive_doubling")]
            print(f"| {n} | " + " | ".join(f"{t * 1e6:.1f}" for t in times)
                  + "".join(f" | {r:.2f}" for r in ratios) + f" | {busbw:.2f} |")


if __name__ == "__main__":
    main()
