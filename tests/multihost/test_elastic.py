"""Elastic kolorun across fake hosts (network namespaces, real sshd): a whole host lost mid-run
(its sshd and every process on it killed), and a host added by the discovery script, whose
worker is started over ssh and joins the running job. The worker is plain kolo
(tests/python/workers/elastic_loop.py): a loop of checked allreduces with shutdown()/init()."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cluster import kill_pids, netns_pids
from test_kolorun import SHARED_WORKERS, kolorun

LOOP = str(SHARED_WORKERS / "elastic_loop.py")
FORWARD = ("-x", "OMP_NUM_THREADS", "-x", "KOLO_PEER_TIMEOUT", "-x", "ELASTIC_TEST_STEPS",
           "-x", "ELASTIC_TEST_STEP_SECONDS", "-x", "ELASTIC_TEST_CHECK_HOSTS")


class Job:
    def __init__(self, cluster, flags, env, timeout=240):
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(
            [kolorun(), *flags, *FORWARD, sys.executable, LOOP], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
            env=cluster.env(OMP_NUM_THREADS="1", KOLO_PEER_TIMEOUT="3",
                            ELASTIC_TEST_STEP_SECONDS="0.1", **env))
        self.deadline = time.monotonic() + timeout
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    @property
    def output(self):
        with self.cond:
            return "\n".join(self.lines)

    def wait_for_line(self, pattern):
        regex = re.compile(pattern)
        with self.cond:
            while not any(regex.search(line) for line in self.lines):
                if time.monotonic() > self.deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    pytest.fail(f"no line matching {pattern!r}:\n" + "\n".join(self.lines))
                self.cond.wait(0.5)

    def finish(self):
        try:
            code = self.proc.wait(timeout=max(1, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("kolorun did not finish in time (hang?):\n" + self.output)
        time.sleep(0.5)
        return code


def restart_sshd(cluster, host):
    cluster._start_sshd(host)  # noqa: SLF001 - the harness's own helper, for the next tests


def test_lost_host_the_others_continue(fake_hosts):
    job = Job(fake_hosts, ["-np", "3", "--min-np", "2", "-H", "ns1:1,ns2:1,ns3:1"],
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
    job = Job(fake_hosts, ["-np", "2", "--min-np", "2", "--max-np", "3",
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
