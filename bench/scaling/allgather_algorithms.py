#!/usr/bin/env python3
"""kolo's small allgathers measured algorithm against algorithm on this machine, in one command:
ring, recursive doubling and Bruck's algorithm (kolo-bench -g forces each) at np 5 and 6 (no
powers of two: doubling folds extra ranks in and hands them the whole output at the end, Bruck
does not), over loopback TCP and over kolo's shared-memory links with the arena off, in
interleaved rounds; medians side by side, and the ratios against Bruck.

    flock /work/wt/bench.lock python3 bench/scaling/allgather_algorithms.py --json runs.json
    python3 bench/scaling/allgather_algorithms.py --replay runs.json

np 5 and 6 oversubscribe a 2-core machine (every step needs its two ranks on a core): the
ratios say which algorithm is cheaper here, not what a cluster with a core per rank would see.
bench/SCALING.md, "Bruck's allgather", has the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import collective_steps as steps  # noqa: E402
import measure  # noqa: E402
from run import measure_or_replay, measurement_parser  # noqa: E402
from run_collectives import environment  # noqa: E402

ALGORITHMS = ("ring", "doubling", "bruck")
RANKS = (5, 6)  # --ranks changes them


def cases(ranks: list[int]) -> list[measure.Case]:
    return [measure.Case(transport, np_, algorithm, collective="allgather")
            for transport in ("tcp", "shm") for np_ in ranks for algorithm in ALGORITHMS]


def main() -> None:
    parser = measurement_parser(__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=list(RANKS))
    parser.set_defaults(max_bytes="512K", rounds=5, iterations=20, no_netns=True)
    args = parser.parse_args()
    # One host only: measure_or_replay's namespaces stay out.
    measured = measure_or_replay(args, lambda: cases(args.ranks), list, environment)
    by_key = {(c.transport, c.np, c.algorithm): c.medians() for c in measured}
    for transport in ("tcp", "shm"):
        for np_ in sorted({case.np for case in measured}):
            medians = {a: by_key[(transport, np_, a)] for a in ALGORITHMS}
            steps_of = {a: int(steps.ALLGATHER[a](np_, 1.0)[0]) for a in ALGORITHMS}
            print(f"\n### {transport} np {np_}: median us over {len(measured[0].runs)} rounds "
                  f"(steps: ring {steps_of['ring']}, doubling {steps_of['doubling']}, "
                  f"Bruck {steps_of['bruck']}; kolo picks {steps.kolo_pick('allgather', np_, 8)} "
                  "up to 512 KiB)\n")
            print("| bytes | ring | doubling | Bruck | ring/Bruck | doubling/Bruck |")
            print("|---|---|---|---|---|---|")
            for n in sorted(medians["bruck"]):
                ring, doubling, bruck = (medians[a][n] * 1e6 for a in ALGORITHMS)
                print(f"| {n} | {ring:.1f} | {doubling:.1f} | {bruck:.1f} | {ring / bruck:.2f} | "
                      f"{doubling / bruck:.2f} |")


if __name__ == "__main__":
    main()
