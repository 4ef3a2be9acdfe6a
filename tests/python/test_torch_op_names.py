"""Named torch operations are "<kind>.<name>", as in Horovod (its test_timeline.py looks for
'allreduce.test_allreduce' in the timeline): one user name shared by operations of different
kinds in flight at once, the same kind twice refused, and the timeline's rows named as
Horovod's; on 2 and 3 ranks."""

import json

import pytest

from conftest import run_job

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

KINDS = ["allreduce", "allgather", "broadcast", "alltoall", "reducescatter"]


@pytest.mark.parametrize("np_", [2, 3])
def test_one_user_name_in_flight_in_every_kind_at_once(np_, tmp_path):
    timeline = tmp_path / "timeline.json"
    result = run_job(np_, "torch_op_names.py", env={"HOROVOD_TIMELINE": str(timeline)},
                     timeout=60)
    result.assert_ok(np_)
    rows = {event["args"]["name"] for event in json.loads(timeline.read_text())
            if event.get("name") == "process_name"}
    expected = {f"{kind}.metric" for kind in KINDS} | {"grouped_allreduce.metric.0",
                                                       "grouped_allreduce.metric.1"}
    assert expected <= rows, sorted(rows)
    assert "metric" not in rows, sorted(rows)
