"""Fault cases across hosts (network namespaces with an sshd each; kolorun reaches the ranks over
ssh): the rank on host ns2 is killed or stopped inside its namespace, or ns2's link is cut with
`ip link set down`. Bounds as in tests/faults/test_fault_matrix.py; a cut link adds kolorun's
SIGKILL escalation (5 s after SIGTERM), since the SIGTERM request cannot reach ns2's agent."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from fault_harness import (DETECTION_SLACK, GRACE, PEER_TIMEOUT, WORKER, Measured, pids_alive,
                           record, run_job, within_bound)

HOSTS = "ns1:1,ns2:1,ns3:1"
VICTIM, VICTIM_HOST = 1, "ns2"
SURVIVORS = (0, 2)
KILL_AFTER = 5.0  # kolorun's SIGTERM -> SIGKILL escalation (FailurePolicy::Timings)
BOUNDS = {"SIGKILL": PEER_TIMEOUT + DETECTION_SLACK + GRACE + 1.0,
          "SIGSTOP": PEER_TIMEOUT + DETECTION_SLACK + GRACE + 1.0,
          "link cut": PEER_TIMEOUT + DETECTION_SLACK + GRACE + KILL_AFTER + 1.0}


def in_namespace(cluster, host: str, *command: str, check: bool = True) -> None:
    subprocess.run(["ip", "netns", "exec", cluster.netns(host), *command], check=check,
                   timeout=30)


def wait_reachable(cluster, host: str) -> None:
    """After a link comes back up, until ssh reaches `host` again (the next test needs it)."""
    deadline = time.monotonic() + 30
    while cluster.ssh(host, "true", check=False).returncode != 0 and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.mark.parametrize("fault", sorted(BOUNDS))
def test_remote_fault(fake_hosts, fault):
    def inject(_proc, job_so_far) -> None:
        if fault == "link cut":
            in_namespace(fake_hosts, VICTIM_HOST, "ip", "link", "set", "kolomh0", "down")
            return
        pid = next(int(line.split()[2]) for line in job_so_far.lines(VICTIM)
                   if line.startswith("READY "))
        in_namespace(fake_hosts, VICTIM_HOST, "kill", "-KILL" if fault == "SIGKILL" else "-STOP",
                     str(pid))

    try:
        job = run_job(["-np", "3", "-H", HOSTS, "-x", "OMP_NUM_THREADS", sys.executable,
                       str(WORKER), str(VICTIM), "forever", "KILL"],
                      env=fake_hosts.env(OMP_NUM_THREADS="1"), timeout=150,
                      fault_after_ready=inject)
    finally:
        in_namespace(fake_hosts, VICTIM_HOST, "ip", "link", "set", "kolomh0", "up", check=False)
        wait_reachable(fake_hosts, VICTIM_HOST)
    row = Measured(f"netns {fault}, rank {VICTIM} on {VICTIM_HOST}", returncode=job.returncode)
    for rank in SURVIVORS:
        row.detections[rank] = job.detection(rank)[0] - job.fault_at
    row.exit_after = job.exited_at - job.fault_at
    record(row)
    assert job.returncode != 0, job.output
    for rank in SURVIVORS:
        message = job.detection(rank)[1]
        assert f"rank {VICTIM} on host '{VICTIM_HOST}'" in message, (rank, message)
        within_bound(row.detections[rank], PEER_TIMEOUT + DETECTION_SLACK, (row, job.output))
    within_bound(row.exit_after, BOUNDS[fault], (row, job.output))
    launcher = [line for line in job.output.splitlines() if line.startswith("[kolorun]")]
    assert any(f"host {VICTIM_HOST}" in line or "ns" in line for line in launcher), job.output


def test_remote_rank_stopped_after_the_shutdown_agreement_is_ended_by_its_agent(fake_hosts):
    """The others exit 0, so no failure starts the grace period, and kolorun cannot read ns2's
    processes: once ranks have ended it asks each remote agent to watch its own rank, and ns2's
    agent ends the stopped one after the allowance (peer timeout + grace)."""
    job = run_job(["-np", "3", "-H", HOSTS, "-x", "OMP_NUM_THREADS", sys.executable, str(WORKER),
                   str(VICTIM), "aftershutdown", "STOP"],
                  env=fake_hosts.env(OMP_NUM_THREADS="1"), timeout=150)
    fault = job.fault_time(VICTIM)
    row = Measured(f"netns SIGSTOP after shutdown, rank {VICTIM} on {VICTIM_HOST}",
                   returncode=job.returncode, exit_after=job.exited_at - fault)
    record(row)
    assert job.returncode == 128 + signal.SIGKILL, job.output
    for rank in SURVIVORS:
        assert f"rank {rank} OK" in job.lines(rank), job.output
    assert "has been stopped (SIGSTOP)" in job.output, job.output
    # The allowance, then the agent looks at most once a second, then kolorun hears of it.
    within_bound(row.exit_after, PEER_TIMEOUT + GRACE + 3.0, (row, job.output))


def test_kolorun_killed_leaves_no_remote_rank(fake_hosts):
    """kolorun dies with SIGKILL: each host's agent sees its ssh session end and stops its rank."""
    job = run_job(["-np", "3", "-H", HOSTS, "-x", "OMP_NUM_THREADS", sys.executable, str(WORKER),
                   str(VICTIM), "forever", "KILL"], env=fake_hosts.env(OMP_NUM_THREADS="1"),
                  timeout=150, fault_after_ready=lambda proc, _: proc.kill())
    pids = {rank: int(line.split()[2]) for rank in range(3) for line in job.lines(rank)
            if line.startswith("READY ")}
    assert len(pids) == 3, job.output
    deadline = job.fault_at + 10.0  # the agent's SIGTERM, SIGKILL 3 s later at worst
    while pids_alive(list(pids.values())) and time.monotonic() < deadline:
        time.sleep(0.1)
    gone_after = time.monotonic() - job.fault_at
    left = pids_alive(list(pids.values()))
    record(Measured("netns kolorun SIGKILL (remote ranks gone)", exit_after=gone_after,
                    returncode=job.returncode))
    assert not left, f"remote ranks {left} outlived kolorun by more than 10 s"
