"""Three fake hosts for the scaling bench: tests/multihost/cluster.py's namespaces with sshd
(ns1..ns3, each joined to a bridge by a veth pair), every veth end shaped to a line rate with tbf
so each host's link is a 10 Gb/s NIC in both directions.

This kernel has no netem qdisc, so no delay can be added to the links: the bench measures alpha on
the shaped veth as it is (a few microseconds) and the 25 us of the issue's link is added to alpha
in the model only (see bench/SCALING.md). Run it only under `flock /tmp/kolo-netns.lock`; the
cluster's own lock (/tmp/kolo-multihost.lock, as the multi-host tests) is taken inside."""

from __future__ import annotations

import atexit
import fcntl
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "multihost"))
import cluster as harness  # noqa: E402

LOCK = Path("/tmp/kolo-multihost.lock")


def shape(made: harness.Cluster, gbit: float) -> None:
    """tbf on both ends of every host's veth: egress from the host (its end inside the namespace)
    and egress towards it (the bridge's end). The bucket holds a few 64 KiB GSO segments, or the
    shaper would stall them."""
    rate = f"{gbit:g}gbit"
    tbf = ["root", "tbf", "rate", rate, "burst", "512kb", "latency", "20ms"]
    for host in made.names:
        index = host[2:]
        harness.run("tc", "qdisc", "replace", "dev", f"{harness.VETH_PREFIX}{index}", *tbf)
        harness.run("ip", "netns", "exec", made.netns(host), "tc", "qdisc", "replace", "dev",
                    harness.BRIDGE, *tbf)


class ShapedCluster:
    """Context manager: builds the hosts, shapes their links, tears everything down after (also
    on SIGTERM/SIGHUP and at exit)."""

    def __init__(self, hosts: int, gbit: float) -> None:
        self.hosts, self.gbit = hosts, gbit
        self.cluster: harness.Cluster | None = None
        self.lock = None

    def __enter__(self) -> harness.Cluster:
        reason = harness.unavailable_reason()
        if reason:
            raise SystemExit(f"scaling: namespaces unavailable: {reason}")
        self.lock = open(LOCK, "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        harness.sweep_stale()
        self.cluster = harness.Cluster(self.hosts)
        atexit.register(self.cluster.destroy)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        self.cluster.create()
        shape(self.cluster, self.gbit)
        return self.cluster

    def _on_signal(self, signum, _frame) -> None:
        if self.cluster:
            self.cluster.destroy()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    def __exit__(self, *_exc) -> None:
        if self.cluster:
            self.cluster.destroy()
        if self.lock:
            self.lock.close()
