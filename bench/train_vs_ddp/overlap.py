"""How much of kolo's gradient communication overlaps the backward pass, from a timeline.

Inputs: rank 0's Chrome-trace timeline (HOROVOD_TIMELINE / hvd.start_timeline) and, from the same
run, rank 0's step marks on the timeline's clock (microseconds since start_timeline; train.py
records them): for every timed step, when backward began, when optimizer.step() was called (backward
done: step() first synchronizes) and when step() returned.

Communication time is the union of the backend's collective phases (`KOLO_ALLREDUCE`, or
`MPI_ALLREDUCE` under --mpi: the bytes on the wire, not negotiation or queueing) of all gradient
tensors, a fused group counted once. Of each step's communication, the part before step() was
called ran while backward was still computing: overlapped. The rest is exposed: step() waited
for it.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

COLLECTIVE = re.compile(r"^(?!NEGOTIATE_)[A-Z]+_ALLREDUCE$")


def collective_intervals(events: list[dict]) -> tuple[list[tuple[float, float]], dict[int, float]]:
    """[begin, end) of every backend allreduce phase in the trace, in microseconds, merged; and
    when each executed group (a fused response: its id is in the phase's args) began."""
    open_at: dict[tuple[int, str], float] = {}
    spans = []
    groups: dict[int, float] = {}
    for e in events:
        if e.get("ph") not in ("B", "E") or not COLLECTIVE.match(e.get("name", "")):
            continue
        key = (e["pid"], e["name"])
        if e["ph"] == "B":
            open_at[key] = float(e["ts"])
            groups.setdefault(e.get("args", {}).get("group", -len(groups) - 1), float(e["ts"]))
        elif key in open_at:
            spans.append((open_at.pop(key), float(e["ts"])))
    return merge(spans), groups


def merge(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    return [(b, e) for b, e in merged]


def covered(spans: list[tuple[float, float]], begin: float, end: float) -> float:
    """How much of [begin, end) the merged `spans` cover."""
    return sum(max(0.0, min(e, end) - max(b, begin)) for b, e in spans)


def analyse(timeline_path: str | Path, steps: list[list[float]]) -> dict:
    """The overlap figures of one run: `steps` holds [backward begins, step() called, step()
    returned] per timed step, in the timeline's microseconds."""
    events = json.loads(Path(timeline_path).read_text())
    spans, groups = collective_intervals(events)
    overlapped = exposed = 0.0
    backward_ms, wait_ms, comm_ms, group_counts = [], [], [], []
    for begin, called, returned in steps:
        group_counts.append(sum(1 for ts in groups.values() if begin <= ts < returned))
        during = covered(spans, begin, called)
        after = covered(spans, called, returned)
        overlapped += during
        exposed += after
        backward_ms.append((called - begin) / 1000)
        wait_ms.append((returned - called) / 1000)
        comm_ms.append((during + after) / 1000)
    total = overlapped + exposed
    return {
        "overlap_fraction": overlapped / total if total else 0.0,
        "backward_ms": statistics.median(backward_ms),
        "comm_ms": statistics.median(comm_ms),
        "step_wait_ms": statistics.median(wait_ms),
        "groups_per_step": statistics.median(group_counts),
        "steps": len(steps),
    }
