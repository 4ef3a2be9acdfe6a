"""Elastic kolorun across fake hosts (network namespaces, real sshd): a whole host lost mid-run
(its sshd and every process on it killed), and a host added by the discovery script, whose
worker is started over ssh and joins the running job. The worker is plain kolo
(tests/python/workers/elastic_loop.py): a loop of checked allreduces with shutdown()/init()."""

from __future__ import annotations

import re
import sys
import time

from cluster import kill_pids, netns_pids
from test_kolorun import REPO, SHARED_WORKERS, kolorun

sys.path.insert(0, str(REPO / "tests" / "python"))
from elastic_job import Job  # noqa: E402

LOOP = str(SHARED_WORKERS / "elastic_loop.py")
FORWARD = ("-x", "OMP_NUM_THREADS", "-x", "KOLO_PEER_TIMEOUT", "-x", "ELASTIC_TEST_STEPS",
           "-x", "ELASTIC_TEST_STEP_SECONDS", "-x", "ELASTIC_TEST_CHECK_HOSTS")


def start(cluster, flags, env, timeout=240):
    return Job([kolorun(), *flags, *FORWARD, sys.executable, LOOP],
               cluster.env(OMP_NUM_THREADS="1", KOLO_PEER_TIMEOUT="3",
                           ELASTIC_TEST_STEP_SECONDS="0.1", **env), timeout)


def restart_sshd(cluster, host):
    cluster._start_sshd(host)  # noqa: SLF001 - the harness's own helper, for the next tests


def test_lost_host_the_others_continue(fake_hosts):
    job = start(fake_hosts, ["-np", "3", "--min-np", "2", "-H", "ns1:1,ns2:1,ns3:1"],
              {"ELASTIC_TEST_STEPS": "60", "ELASTIC_TEST_CHECK_HOSTS": "0"})
    try:
        job.wait_for_line(r"^\[2\]<stdout>:round 1 rank 2 size 3 step 0")
        time.sleep(1.0)
        kill_pids(netns_pids(fake_hosts.netns("ns3")))  # sshd, the agent and the worker: gone
        code = job.finish()
    finally:
        restart_sshd(fake_hosts, "ns3")
    output = job.output
    assert code == 0, output
    assert re.search(r"\[kolorun\] elastic: rank 2 on host ns3 lost \(.*\); continuing with 2 "
                     r"ranks from commit \d+", output), output
    assert re.search(r"^\[0\]<stdout>:round 2 rank 0 size 2 step [1-9]", output, re.M), output
    assert re.search(r"^\[1\]<stdout>:round 2 rank 1 size 2 step [1-9]", output, re.M), output
    for serial in (0, 1):
        assert f"[{serial}]<stdout>:worker ns{serial + 1}:0#{serial} OK steps 60" in output, output


def test_discovered_host_gets_a_worker_over_ssh_that_joins(fake_hosts, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("ns1:1\nns2:1\n")
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts}\n")
    script.chmod(0o755)
    job = start(fake_hosts, ["-np", "2", "--min-np", "2", "--max-np", "3",
                           "--host-discovery-script", str(script)],
              {"ELASTIC_TEST_STEPS": "50", "ELASTIC_TEST_CHECK_HOSTS": "1"})
    job.wait_for_line(r"^\[1\]<stdout>:round 1 rank 1 size 2 step 0")
    hosts.write_text("ns1:1\nns2:1\nns3:1\n")
    code = job.finish()
    output = job.output
    assert code == 0, output
    assert "[kolorun] elastic: host ns3 added (1 slots)" in output, output
    assert re.search(r"^\[2\]<stdout>:round 2 rank 2 size 3 step [1-9]", output, re.M), output
    assert "[2]<stdout>:worker ns3:0#2 OK steps 50" in output, output
