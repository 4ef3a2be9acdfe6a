"""Elastic TensorFlow: a graph traced before the job grew still reduces after it (Horovod reads
the size when an elastic job's graph runs; kolo read it when the graph was traced, so an old
worker skipped the allreduce its new peer waited for)."""

from __future__ import annotations

import sys

import pytest

from elastic_harness import WORKERS, Discovery, ElasticJob

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu")


def test_graph_traced_at_one_rank_reduces_after_the_job_grew(tmp_path):
    discovery = Discovery(tmp_path, ["localhost:1"])
    job = ElasticJob(["-np", "1", "--min-np", "1", "--max-np", "2", "--host-discovery-script",
                      str(discovery.script), sys.executable,
                      str(WORKERS / "tensorflow_elastic_growth.py")],
                     env={"TF_CPP_MIN_LOG_LEVEL": "3", "KOLO_PEER_TIMEOUT": "10"})
    job.wait_for(r"^\[0\]<stdout>:size 1 rank 0 grad 1\.0")
    discovery.set(["localhost:1", "127.0.0.1:1"])  # a second name of this machine: one slot more
    code = job.finish()
    output = job.output
    assert code == 0, output
    at_two = [line for line in output.splitlines() if "<stdout>:size 2 " in line]
    assert any(line.startswith("[0]<stdout>:size 2 rank 0 grad 1.5") for line in at_two), output
    assert any(line.startswith("[1]<stdout>:size 2 rank 1 grad 1.5") for line in at_two), output
    assert all(line.endswith("grad 1.5") for line in at_two), output
    assert "a collective failed" not in output, output
