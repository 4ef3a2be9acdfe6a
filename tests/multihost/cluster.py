"""A small cluster of fake hosts on one machine, for real multi-host tests of kolorun.

Each host is a network namespace (kolo-mh-ns1, ...) joined to a bridge in the root namespace by a
veth pair: the root namespace (where kolorun and its rendezvous server run) is 10.231.0.1 on the
bridge "kolomh0", host nsN is 10.231.0.(10+N) on its own "kolomh0": one interface name on every
machine of the job, launcher included, as on a real cluster, so --network-interfaces kolomh0 means
the same network everywhere. Every host also gets a port-less bridge "docker0" with the same
172.17.0.1/16 address, like machines that all run docker: an interface peers cannot use, which must
not make the job hang. Each host runs a real sshd (host and user keys generated into a temp dir)
in its own UTS namespace, so what runs there sees its own host name (ns1, ...) as on separate
machines (a job that mpirun starts finds its hosts by gethostname), and the names ns1, ns2, ...
resolve through marked lines in /etc/hosts. The ssh client is reached
through a wrapper script (first on PATH) that passes `-F <our config>`, so the user's ~/.ssh is
never read or touched.

Everything created carries a fixed prefix, so `sweep_stale()` can remove what a killed earlier
run left behind, and `Cluster.destroy()` is idempotent and safe to call from a signal handler.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

NETNS_PREFIX = "kolo-mh-"
BRIDGE = "kolomh0"  # in the root namespace; each host's own end carries the same name
VETH_PREFIX = "kolomh-h"  # root-namespace ends; the other ends live in the namespaces
HOSTS_MARK = "# kolo-multihost-test"
TEMP_PREFIX = "kolo-mh-"
SUBNET = "10.231.0"
ROOT_ADDRESS = f"{SUBNET}.1"
DOCKER_LIKE = "172.17.0.1/16"
SSHD = "/usr/sbin/sshd"
ETC_HOSTS = Path("/etc/hosts")

# The cluster this process made ("cluster": it), shared by every fixture that asks for one: the
# conftest that makes it is loaded under several module names, and this module only once.
IN_THIS_PROCESS: dict[str, "Cluster"] = {}


def run(*cmd: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stdout.strip()}")
    return result


def unavailable_reason() -> str | None:
    """Why namespaces + sshd cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "the multi-host tests need root (network namespaces, /etc/hosts, sshd)"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing (install openssh-server)"
    probe = f"{NETNS_PREFIX}probe"
    made = run("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create network namespaces: {made.stdout.strip()}"
    run("ip", "netns", "del", probe, check=False)
    return None


def netns_pids(netns: str) -> list[int]:
    out = run("ip", "netns", "pids", netns, check=False).stdout
    return [int(word) for word in out.split() if word.isdigit()]


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def remove_hosts_lines() -> None:
    """Drops our marked lines from /etc/hosts, rewriting it in place (it may be a bind mount)."""
    try:
        text = ETC_HOSTS.read_text()
    except OSError:
        return
    kept = [line for line in text.splitlines(keepends=True) if HOSTS_MARK not in line]
    if len(kept) != len(text.splitlines(keepends=True)):
        with open(ETC_HOSTS, "r+") as hosts:
            hosts.write("".join(kept))
            hosts.truncate()


def sweep_stale() -> None:
    """Removes every resource an earlier, killed run may have left: processes inside our
    namespaces (sshd, ranks), the namespaces, the bridge and veths, /etc/hosts lines, temp dirs."""
    for line in run("ip", "netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NETNS_PREFIX):
            kill_pids(netns_pids(name))
            run("ip", "netns", "del", name, check=False)
    links = run("ip", "-o", "link", "show", check=False).stdout
    for line in links.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name == BRIDGE or name.startswith(VETH_PREFIX):
                run("ip", "link", "del", name, check=False)
    remove_hosts_lines()
    for stale in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        shutil.rmtree(stale, ignore_errors=True)


class Cluster:
    def __init__(self, count: int) -> None:
        self.names = [f"ns{i}" for i in range(1, count + 1)]
        self.tmp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        self.bin = self.tmp / "bin"
        self.made_run_sshd = False
        self.destroyed = False

    # -- naming --------------------------------------------------------------------------------
    @staticmethod
    def netns(host: str) -> str:
        return NETNS_PREFIX + host

    @staticmethod
    def address(host: str) -> str:
        return f"{SUBNET}.{10 + int(host[2:])}"

    # -- creation ------------------------------------------------------------------------------
    def create(self) -> None:
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{ROOT_ADDRESS}/24", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        for host in self.names:
            self._create_host(host)
        self._write_keys_and_client_config()
        with open(ETC_HOSTS, "a") as hosts:
            for host in self.names:
                hosts.write(f"{self.address(host)} {host} {HOSTS_MARK}\n")
        for host in self.names:
            self._start_sshd(host)

    def _create_host(self, host: str) -> None:
        netns, index = self.netns(host), host[2:]
        outside, inside = f"{VETH_PREFIX}{index}", f"kolomh-n{index}"
        run("ip", "netns", "add", netns)
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        run("ip", "link", "set", inside, "netns", netns)
        run("ip", "link", "set", outside, "master", BRIDGE)
        run("ip", "link", "set", outside, "up")
        inns = ("ip", "netns", "exec", netns)
        run(*inns, "ip", "link", "set", inside, "name", BRIDGE)
        run(*inns, "ip", "addr", "add", f"{self.address(host)}/24", "dev", BRIDGE)
        run(*inns, "ip", "link", "set", BRIDGE, "up")
        run(*inns, "ip", "link", "set", "lo", "up")
        # A port-less bridge, like docker0 on a host without containers: up, addressed, useless.
        run(*inns, "ip", "link", "add", "docker0", "type", "bridge")
        run(*inns, "ip", "addr", "add", DOCKER_LIKE, "dev", "docker0")
        run(*inns, "ip", "link", "set", "docker0", "up")

    def _write_keys_and_client_config(self) -> None:
        for key in ("host_key", "id_ed25519"):
            run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"kolo-multihost-{key}",
                "-f", str(self.tmp / key))
        shutil.copy(self.tmp / "id_ed25519.pub", self.tmp / "authorized_keys")
        host_key = (self.tmp / "host_key.pub").read_text().split()
        names = ",".join(self.names + [self.address(h) for h in self.names])
        (self.tmp / "known_hosts").write_text(f"{names} {host_key[0]} {host_key[1]}\n")
        (self.tmp / "ssh_config").write_text(
            f"Host {' '.join(self.names)} {' '.join(self.address(h) for h in self.names)}\n"
            "  User root\n"
            f"  IdentityFile {self.tmp / 'id_ed25519'}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.tmp / 'known_hosts'}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n"
            "  ConnectTimeout 10\n"
            "  LogLevel ERROR\n"
            "Host *\n"
            "  BatchMode yes\n")
        self.bin.mkdir()
        wrapper = self.bin / "ssh"
        wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/ssh -F {self.tmp / 'ssh_config'} \"$@\"\n")
        wrapper.chmod(0o755)

    def _start_sshd(self, host: str) -> None:
        if not Path("/run/sshd").is_dir():  # sshd's privilege-separation directory
            os.makedirs("/run/sshd", mode=0o755)
            self.made_run_sshd = True
        config = self.tmp / f"sshd_config.{host}"
        config.write_text(
            "Port 22\n"
            f"ListenAddress {self.address(host)}\n"
            f"HostKey {self.tmp / 'host_key'}\n"
            f"PidFile {self.tmp / f'sshd.{host}.pid'}\n"
            f"AuthorizedKeysFile {self.tmp / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "StrictModes no\n"
            "PrintMotd no\n"
            "AcceptEnv *\n"
            "LogLevel VERBOSE\n")
        log = self.tmp / f"sshd.{host}.log"
        run(*self.command_on(host, SSHD, "-f", str(config), "-E", str(log)))
        deadline = time.monotonic() + 30  # the new links may take a moment to forward
        while True:
            attempt = self.ssh(host, "true", check=False)
            if attempt.returncode == 0:
                return
            if time.monotonic() > deadline:
                log = (self.tmp / f"sshd.{host}.log").read_text(errors="replace")
                raise RuntimeError(f"sshd in {self.netns(host)} never accepted us:\n"
                                   f"{attempt.stdout}\nsshd log:\n{log}")
            time.sleep(0.2)

    # -- use -----------------------------------------------------------------------------------
    def command_on(self, host: str, *command: str) -> list[str]:
        """`command` as if run on `host`: inside its network namespace, in a UTS namespace of its
        own whose host name is `host`."""
        return ["ip", "netns", "exec", self.netns(host), "unshare", "--uts", "sh", "-c",
                'hostname "$0" && exec "$@"', host, *command]

    def env(self, **extra: str) -> dict[str, str]:
        """The environment for kolorun: our ssh wrapper first on PATH."""
        env = dict(os.environ)
        env["PATH"] = f"{self.bin}:{env.get('PATH', '')}"
        env.update(extra)
        return env

    def ssh(self, host: str, *command: str, check: bool = True,
            timeout: float = 20) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / "ssh"), host, *command], check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=self.env())

    def kill_leftovers(self) -> None:
        """Kills every process in the namespaces except the sshd daemons."""
        daemons = set()
        for host in self.names:
            pidfile = self.tmp / f"sshd.{host}.pid"
            if pidfile.exists():
                daemons.add(int(pidfile.read_text().split()[0]))
        for host in self.names:
            kill_pids([pid for pid in netns_pids(self.netns(host)) if pid not in daemons])

    # -- teardown ------------------------------------------------------------------------------
    def destroy(self) -> None:
        """Idempotent; tolerates half-built clusters."""
        if self.destroyed:
            return
        self.destroyed = True
        remove_hosts_lines()
        for host in self.names:
            netns = self.netns(host)
            kill_pids(netns_pids(netns))
            run("ip", "netns", "del", netns, check=False)
        run("ip", "link", "del", BRIDGE, check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)
