"""Issue 11, point 3: a whole host lost. Three fake hosts (network namespaces with an sshd each),
one worker on each; mid-epoch every process of host ns3 is killed, its sshd included (the
machine is gone). The two other workers fail their collectives, re-form the job at size 2 and
resume from the last commit; the deterministic worker checks exactly-once training and equal
state on both."""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

from cluster import kill_pids, netns_pids

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from elastic_harness import WORKERS, Discovery, ElasticJob, elastic_unsupported_reason  # noqa: E402

import pytest  # noqa: E402


def test_whole_host_lost(fake_hosts, tmp_path):
    reason = elastic_unsupported_reason()
    if reason:
        pytest.skip(reason)
    script = tmp_path / "elastic_train.py"
    shutil.copy(WORKERS / "elastic_train.py", script)
    (tmp_path / "markers").mkdir()
    discovery = Discovery(tmp_path, ["ns1:1", "ns2:1", "ns3:1"])
    env = fake_hosts.env(OMP_NUM_THREADS="1", KOLO_PEER_TIMEOUT="3")
    job = ElasticJob(["-np", "3", "--min-np", "2", "--max-np", "3", "--host-discovery-script",
                      str(discovery.script), "-x", "OMP_NUM_THREADS", sys.executable, str(script),
                      "--marker-dir", str(tmp_path / "markers"), "--samples", "96",
                      "--step-sleep", "0.2"], env=env, cwd=tmp_path, limit=300, fake_ssh=False)
    try:
        job.wait_for(r"\[0\]<stdout>:SYNC size=3 step=0 ")
        time.sleep(2.0)  # a few steps into the epoch
        kill_pids(netns_pids(fake_hosts.netns("ns3")))  # sshd, agent and worker: the host is gone
        code = job.finish()
    finally:
        job.kill()
        fake_hosts._start_sshd("ns3")  # the next test gets its host back
    assert code == 0, f"job failed ({code}):\n{job.output}"
    sizes = [int(m.group(1)) for line in job.rank_lines(0)
             if (m := re.match(r"SYNC size=(\d+) ", line))]
    assert sizes == [3, 2], job.output
    assert any(line.startswith("FINAL") for line in job.rank_lines(0)), job.output
    assert "EPOCH 1 exactly-once size=2" in job.rank_lines(0), job.output
