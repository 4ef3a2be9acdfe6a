"""The harness itself: each fake host is its own network namespace, reachable by name over ssh,
with its unroutable docker0 and without the user's ~/.ssh."""

import re
import subprocess


def test_each_host_is_reached_over_ssh_in_its_own_namespace(fake_hosts):
    for host in fake_hosts.names:
        out = fake_hosts.ssh(host, "ip", "-o", "-4", "addr", "show").stdout
        assert re.search(rf"kolomh0\s+inet {re.escape(fake_hosts.address(host))}/24", out), out
        assert "docker0" in out and "172.17.0.1/16" in out, out
        for other in fake_hosts.names:
            if other != host:
                assert fake_hosts.address(other) not in out, out
        # Name resolution and the network path between hosts work from inside a host.
        peer = next(name for name in fake_hosts.names if name != host)
        assert fake_hosts.ssh(host, str(fake_hosts.bin / "ssh"), peer, "true").returncode == 0


def test_unknown_host_key_is_refused(fake_hosts):
    # StrictHostKeyChecking with our own known_hosts: a host key we did not generate fails.
    result = subprocess.run(["ssh", "-F", str(fake_hosts.tmp / "ssh_config"), "-o",
                             f"UserKnownHostsFile={fake_hosts.tmp / 'nonexistent'}",
                             fake_hosts.names[0], "true"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=20)
    assert result.returncode != 0
    assert "Host key verification failed" in result.stdout, result.stdout
