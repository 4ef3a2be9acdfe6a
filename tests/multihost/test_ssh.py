"""The harness itself: each fake host is its own network namespace, reachable by name over ssh,
with its unroutable docker0 and without the user's ~/.ssh."""

import subprocess


def test_each_host_is_reached_over_ssh_in_its_own_namespace(hosts):
    for host in hosts.names:
        out = hosts.ssh(host, "ip", "-o", "-4", "addr", "show").stdout
        assert f"eth0    inet {hosts.address(host)}/24" in out.replace("\t", " ") or \
            f"inet {hosts.address(host)}/24" in out, out
        assert "docker0" in out and "172.17.0.1/16" in out, out
        for other in hosts.names:
            if other != host:
                assert hosts.address(other) not in out, out
        # Name resolution and the network path between hosts work from inside a host.
        peer = next(name for name in hosts.names if name != host)
        assert hosts.ssh(host, str(hosts.bin / "ssh"), peer, "true").returncode == 0


def test_unknown_host_key_is_refused(hosts):
    # StrictHostKeyChecking with our own known_hosts: a host key we did not generate fails.
    result = subprocess.run(["ssh", "-F", str(hosts.tmp / "ssh_config"), "-o",
                             f"UserKnownHostsFile={hosts.tmp / 'nonexistent'}", hosts.names[0],
                             "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=20)
    assert result.returncode != 0
    assert "Host key verification failed" in result.stdout, result.stdout
