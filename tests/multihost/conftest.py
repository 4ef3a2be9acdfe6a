"""Fixtures for the multi-host tests: one cluster of fake hosts per session, torn down by a pytest
finalizer, by atexit, and by SIGTERM/SIGHUP handlers, so no namespace, link, sshd or /etc/hosts
line outlives the run. A sweep at start removes what a killed earlier run left."""

from __future__ import annotations

import atexit
import fcntl
import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cluster import IN_THIS_PROCESS, Cluster, sweep_stale, unavailable_reason  # noqa: E402

HOST_COUNT = 3
LOCK = Path("/tmp/kolo-multihost.lock")


def _install_signal_cleanup(cluster: Cluster) -> None:
    def on_signal(signum, _frame):
        cluster.destroy()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    atexit.register(cluster.destroy)


@pytest.fixture(scope="session")
def cluster(request):
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"multi-host tests skipped: {reason}")
    # This file is also loaded under other module names (tests/faults/netns, tests/elastic/netns),
    # each load with its own session fixture; in one pytest process they share one cluster,
    # since a second flock on the machine-wide lock would wait for the first forever.
    if "cluster" in IN_THIS_PROCESS:
        return IN_THIS_PROCESS["cluster"]
    # One harness at a time per machine: the names and the 10.231.0.0/24 range are fixed.
    lock = open(LOCK, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    sweep_stale()
    made = Cluster(HOST_COUNT)
    request.addfinalizer(lock.close)
    request.addfinalizer(made.destroy)
    request.addfinalizer(lambda: IN_THIS_PROCESS.pop("cluster", None))
    _install_signal_cleanup(made)
    made.create()
    IN_THIS_PROCESS["cluster"] = made
    return made


@pytest.fixture
def fake_hosts(cluster):
    """The cluster, with no process but sshd left in it after the test."""
    yield cluster
    cluster.kill_leftovers()
