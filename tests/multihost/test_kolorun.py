"""kolorun across fake hosts: ranks started over ssh in separate network namespaces, each host
with an unroutable docker0 whose address every host shares."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).parent / "workers"
SHARED_WORKERS = REPO / "tests" / "python" / "workers"
FASHION = Path("/usr/share/datasets/fashion-mnist")


def kolorun() -> str:
    # KOLORUN_PATH first: a pyenv python puts its own bin (an installed kolorun) first on PATH.
    path = os.environ.get("KOLORUN_PATH") or shutil.which("kolorun")
    if not path:
        pytest.fail("kolorun is not on PATH (eval \"$(scripts/dev_stage.sh NAME)\" or install)")
    return path


def launch(cluster, np_: int, hostlist: str, *command: str, flags: tuple[str, ...] = (),
           env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    # OMP_NUM_THREADS reaches the remote ranks only when forwarded (-x).
    cmd = [kolorun(), "-np", str(np_), "-H", hostlist, "-x", "OMP_NUM_THREADS", *flags, *command]
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=cluster.env(OMP_NUM_THREADS="1", **(env or {})))
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        pytest.fail(f"{cmd} did not finish within {timeout} s (hang?):\n{out}")


def assert_ok(result: subprocess.CompletedProcess, np_: int) -> None:
    assert result.returncode == 0, result.stdout
    for rank in range(np_):
        assert f"[{rank}]<stdout>:rank {rank} OK" in result.stdout, result.stdout


def listening_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "DEBUG: listening at" in line]


@pytest.mark.parametrize("np_,hostlist", [(2, "ns1:1,ns2:1"), (3, "ns1:1,ns2:1,ns3:1"),
                                          (4, "ns1:2,ns2:2")])
def test_every_collective_across_hosts(fake_hosts, np_, hostlist):
    result = launch(fake_hosts, np_, hostlist, sys.executable,
                    str(SHARED_WORKERS / "collectives.py"), str(np_), timeout=400)
    assert_ok(result, np_)


def test_every_address_is_published_and_peers_meet_on_the_shared_network(fake_hosts):
    result = launch(fake_hosts, 4, "ns1:2,ns2:2", sys.executable,
                    str(SHARED_WORKERS / "allreduce_once.py"), env={"KOLO_LOG_LEVEL": "debug"})
    assert_ok(result, 4)
    lines = listening_lines(result.stdout)
    assert len(lines) == 4, result.stdout
    for line in lines:
        # The route toward the rendezvous (kolomh0) first, then the docker0 address every host has.
        match = re.search(r"listening at (10\.231\.0\.1[12]):(\d+),172\.17\.0\.1:(\d+) ", line)
        assert match and match.group(2) == match.group(3), line
    # Cross-host peers were reached on kolomh0 addresses, the first candidate, never on docker0.
    reached = re.findall(r"reached rank \d+ on host '(ns\d)' at ([\d.]+):\d+ \(address (\d+)",
                         result.stdout)
    assert reached, result.stdout
    for host, address, index in reached:
        assert address == fake_hosts.address(host) and index == "1", (host, address, index)


def test_network_interfaces_flag_limits_the_published_addresses(fake_hosts):
    result = launch(fake_hosts, 3, "ns1:1,ns2:1,ns3:1", sys.executable,
                    str(SHARED_WORKERS / "allreduce_once.py"),
                    flags=("--network-interfaces", "kolomh0"),
                    env={"KOLO_LOG_LEVEL": "debug"})
    assert_ok(result, 3)
    lines = listening_lines(result.stdout)
    assert len(lines) == 3, result.stdout
    for line in lines:
        assert re.search(r"listening at 10\.231\.0\.1[123]:\d+ \(host", line), line


def test_an_unknown_interface_is_an_error_naming_it_and_the_available_ones(fake_hosts):
    # Through the environment: --network-interfaces eth9 would stop kolorun itself first, since
    # the launcher machine lacks eth9 too.
    result = launch(fake_hosts, 2, "ns1:1,ns2:1", sys.executable,
                    str(SHARED_WORKERS / "allreduce_once.py"), env={"KOLO_IFACE": "eth9"},
                    timeout=120)
    assert result.returncode != 0, result.stdout
    assert "rank 1 on host 'ns2': network interface 'eth9'" in result.stdout, result.stdout
    assert "kolomh0 (10.231.0.1" in result.stdout and "docker0 (172.17.0.1)" in result.stdout, \
        result.stdout


def test_only_unroutable_interfaces_fail_within_the_start_timeout_naming_what_was_tried(
        fake_hosts):
    # docker0's address exists on every host, so each rank reaches only its own host there.
    start = time.monotonic()
    result = launch(fake_hosts, 2, "ns1:1,ns2:1", sys.executable,
                    str(SHARED_WORKERS / "allreduce_once.py"),
                    flags=("--start-timeout", "8"), env={"HOROVOD_GLOO_IFACE": "docker0"},
                    timeout=120)
    elapsed = time.monotonic() - start
    assert result.returncode != 0, result.stdout
    assert "rank 0 on host 'ns1' at none of its addresses" in result.stdout, result.stdout
    assert "172.17.0.1:" in result.stdout, result.stdout
    assert elapsed < 100, elapsed  # a bound far above the 8 s start timeout: no hang


@pytest.mark.skipif(not FASHION.is_dir(), reason="Debian's dataset-fashion-mnist is not installed")
def test_mnist_example_trains_across_hosts(fake_hosts, tmp_path):
    result = launch(fake_hosts, 4, "ns1:2,ns2:2", sys.executable,
                    str(REPO / "examples" / "pytorch_mnist.py"), "--epochs", "1",
                    "--checkpoint-dir", str(tmp_path), timeout=580)
    assert result.returncode == 0, result.stdout
    assert "Test set: Average loss" in result.stdout and "test accuracy" in result.stdout, \
        result.stdout
    assert (tmp_path / "checkpoint-1.pt").exists()


def test_a_remote_rank_killed_fails_every_other_rank_and_the_launcher(fake_hosts):
    cmd = [kolorun(), "-np", "4", "-H", "ns1:2,ns2:2", sys.executable,
           str(WORKERS / "steady_allreduce.py")]
    env = fake_hosts.env(KOLO_PEER_TIMEOUT="5")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    lines: list[str] = []
    ready: dict[int, tuple[int, str]] = {}
    try:
        deadline = time.monotonic() + 120
        while len(ready) < 4 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"rank (\d+) ready pid (\d+) host (ns\d)", line)
            if found:
                ready[int(found.group(1))] = (int(found.group(2)), found.group(3))
        assert len(ready) == 4, "".join(lines)
        victim = next(rank for rank, (_, host) in sorted(ready.items()) if host == "ns2")
        pid = ready[victim][0]
        killed_at = time.monotonic()
        subprocess.run(["ip", "netns", "exec", fake_hosts.netns("ns2"), "kill", "-9", str(pid)],
                       check=True)
        rest, _ = proc.communicate(timeout=60)
        exited_after = time.monotonic() - killed_at
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    assert proc.returncode != 0, out
    for rank in sorted(set(ready) - {victim}):
        failed = re.search(rf"rank {rank} failed ([\d.]+)s after its last good step: (.*)", out)
        assert failed, f"rank {rank} did not report the failure:\n{out}"
        assert f"rank {victim}" in failed.group(2), failed.group(0)
        assert float(failed.group(1)) < 15, failed.group(0)
    # The launcher names the rank and its host.
    launcher = [line for line in out.splitlines() if line.startswith("[kolorun]")]
    assert any(f"rank {victim}" in line and "ns2" in line for line in launcher), out
    assert exited_after < 60, exited_after
