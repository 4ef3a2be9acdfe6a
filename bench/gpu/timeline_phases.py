#!/usr/bin/env python3
"""Where a job's collective time went, from a kolo timeline (HOROVOD_TIMELINE=file.json):
per phase name, how many times it ran and its total and median duration; then the span of the
whole timeline. Phases of one tensor nest (e.g. ALLREDUCE holds WAIT_FOR_DATA), so totals overlap.

    python3 bench/gpu/timeline_phases.py timeline.json [--skip-seconds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict


def events(path: str) -> list:
    text = open(path).read().strip()
    if not text.endswith("]"):  # a timeline still being written, or cut at the job's end
        text = text.rstrip(",\n") + "]"
    return json.loads(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("timeline")
    parser.add_argument("--skip-seconds", type=float, default=0.0,
                        help="leave out phases that began in the first seconds (warm-up)")
    args = parser.parse_args()
    open_phases: dict = defaultdict(list)  # pid -> stack of (name, start us)
    durations: dict = defaultdict(list)
    first = last = None
    for event in events(args.timeline):
        if event.get("ph") not in ("B", "E"):
            continue
        ts = float(event["ts"])
        first = ts if first is None else min(first, ts)
        last = ts if last is None else max(last, ts)
        if event["ph"] == "B":
            open_phases[event["pid"]].append((event["name"], ts))
        elif open_phases[event["pid"]]:
            name, start = open_phases[event["pid"]].pop()
            if first is not None and start - first >= args.skip_seconds * 1e6:
                durations[name].append(ts - start)
    print(f"{'phase':<28}{'count':>8}{'total ms':>12}{'median us':>12}")
    for name, values in sorted(durations.items(), key=lambda item: -sum(item[1])):
        print(f"{name:<28}{len(values):>8}{sum(values) / 1e3:>12.1f}"
              f"{statistics.median(values):>12.1f}")
    if first is not None:
        print(f"span {(last - first) / 1e6:.2f} s")


if __name__ == "__main__":
    main()
