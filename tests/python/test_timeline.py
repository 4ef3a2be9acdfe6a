"""HOROVOD_TIMELINE / hvd.start_timeline: rank 0 writes a Chrome-trace JSON array with each
tensor's negotiation, queue, fusion-buffer copies and collective, under kolorun -np 2 and 3."""

import json
from collections import defaultdict

import pytest

from conftest import run_job

REQUIRED_FIELDS = ("name", "ph", "ts", "pid", "tid")


def load_trace(path):
    events = json.loads(path.read_text())  # a complete JSON array, or this raises
    assert isinstance(events, list) and events
    for event in events:
        for field in REQUIRED_FIELDS:
            assert field in event, (field, event)
    return events


def phases_by_tensor(events):
    """tensor name -> list of B event names, and checks B/E pair up on every row."""
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    phases = defaultdict(list)
    depth = defaultdict(list)
    for event in events:
        if event["ph"] == "B":
            phases[names[event["pid"]]].append(event["name"])
            depth[event["pid"]].append(event["name"])
        elif event["ph"] == "E":
            assert depth[event["pid"]], f"unmatched end {event}"
            assert depth[event["pid"]].pop() == event["name"], event
    for pid, stack in depth.items():
        assert not stack, f"{names[pid]}: phases never ended: {stack}"
    return phases, names


def check_ops(events, size, packed=False):
    """packed: fused groups go through the fusion buffer (not the host arena, which reads and
    writes the tensors themselves), so their rows show its copies."""
    phases, names = phases_by_tensor(events)
    fused = [phases[f"fused.{i}"] for i in range(3)]
    for seen in fused:
        for phase in ("NEGOTIATE_ALLREDUCE", "ALLREDUCE", "QUEUE", "KOLO_ALLREDUCE"):
            assert phase in seen, (phase, seen)
    copies = [("MEMCPY_IN_FUSION_BUFFER" in seen, "MEMCPY_OUT_FUSION_BUFFER" in seen)
              for seen in fused]
    if packed:
        assert (True, True) in copies, fused
    else:
        assert set(copies) == {(False, False)}, fused
    assert phases["lone"] == ["NEGOTIATE_ALLREDUCE", "ALLREDUCE", "QUEUE", "KOLO_ALLREDUCE"]
    assert phases["gathered"] == ["NEGOTIATE_ALLGATHER", "ALLGATHER", "QUEUE", "KOLO_ALLGATHER"]
    assert phases["bcast"] == ["NEGOTIATE_BROADCAST", "BROADCAST", "QUEUE", "KOLO_BROADCAST"]
    # The coordinator marks each rank's (uncached) request as it arrives.
    pid = {name: p for p, name in names.items()}["lone"]
    ready = {e["name"] for e in events if e["ph"] == "i" and e["pid"] == pid}
    assert ready == {str(r) for r in range(size)}, ready
    # Fused groups name their group and size in the collective's args.
    fused_pids = {p for p, name in names.items() if name.startswith("fused.")}
    groups = [e["args"] for e in events if e["ph"] == "B" and e["name"] == "KOLO_ALLREDUCE"
              and e["pid"] in fused_pids and "tensors" in e.get("args", {})]
    assert any(g["tensors"] > 1 and g["bytes"] > 0 for g in groups), groups
    return phases


@pytest.mark.parametrize("np_", [2, 3])
def test_timeline_from_environment(np_, tmp_path):
    path = tmp_path / "timeline.json"
    env = {"HOROVOD_TIMELINE": str(path), "HOROVOD_TIMELINE_MARK_CYCLES": "1"}
    run_job(np_, "timeline_ops.py", "env", env=env).assert_ok(np_)
    events = load_trace(path)
    check_ops(events, np_)
    assert any(e["name"] == "CYCLE_START" and e["ph"] == "i" for e in events)
    # Only rank 0 writes: no other file appeared next to it.
    assert [p.name for p in tmp_path.iterdir()] == ["timeline.json"]


def test_timeline_without_cycle_marks_via_kolorun_flag(tmp_path):
    # Without the host arena (KOLO_SHM_ALLREDUCE_BYTES=0) fused groups are packed into the
    # fusion buffer, and their copies show.
    path = tmp_path / "timeline.json"
    run_job(2, "timeline_ops.py", "env", env={"KOLO_SHM_ALLREDUCE_BYTES": "0"},
            launcher_args=("--timeline-filename", str(path))).assert_ok(2)
    events = load_trace(path)
    check_ops(events, 2, packed=True)
    assert not any(e["name"] == "CYCLE_START" for e in events)


@pytest.mark.parametrize("np_", [2, 3])
def test_timeline_started_and_stopped_at_run_time(np_, tmp_path):
    path = tmp_path / "runtime.json"
    run_job(np_, "timeline_ops.py", "runtime", str(path)).assert_ok(np_)
    events = load_trace(path)
    phases = check_ops(events, np_)
    assert "before_start" not in phases
    # Another rank's request may reach the coordinator before rank 0 stops the timeline (its
    # negotiation is then ended at the stop), but the op itself ran after the stop.
    assert "ALLREDUCE" not in phases.get("after_stop", [])
    assert any(e["name"] == "CYCLE_START" for e in events)
