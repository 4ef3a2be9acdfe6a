"""One rank of a fault-matrix job: the victim injects a fault into itself at a chosen phase, the
other ranks keep working and report how and when the job's failure reached them.

    fault_worker.py VICTIM PHASE SIGNAL

PHASE: bootstrap (before init), negotiation (others wait on a tensor the victim never submits),
allreduce (inside a 64 MiB allreduce), arena (inside small shared-memory arena allreduces),
shutdown (the others are in shutdown), aftershutdown (every rank completed shutdown(); the victim
freezes before it exits, the others exit 0), forever (no fault: loop until killed from outside),
intruder (rank 0 starts a kolo process with the wrong job secret against the job's rendezvous
server while the job runs; nobody is harmed), meshintruder (a thread in rank 0 connects to rank 0's
own mesh listener during init() with a forged handshake proof; nobody is harmed),
slowstore:SECONDS[:PROMPT] (every rank reaches the rendezvous server through a proxy that holds
each reply that long, but for the first PROMPT reads of each connection: 2 lets the authentication
through at once).
SIGNAL: KILL or STOP (ignored by intruder and slowstore).

Lines for the test (CLOCK_MONOTONIC is one clock for every process of the machine, network
namespaces included, so times from different ranks compare):
    SHM <prefix>               every rank, first: its job's /dev/shm names start so
    FAULT <t>                  the victim, just before signalling itself
    SHUTDOWN <t>               a survivor, as it calls shutdown() (phase shutdown)
    DETECTED <t> <message>     a survivor, when the error reached it
    UNEXPECTED <what>          a survivor whose collectives kept succeeding
A survivor exits with status 3 after detection (a failed job), as a training script would.
"""

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

import kolo
from job_tag import shm_prefix  # tests/faults/workers/job_tag.py

MIB = 1 << 20


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def inject(sig: int) -> None:
    say(f"FAULT {time.monotonic():.6f}")
    os.kill(os.getpid(), sig)


def inject_later(sig: int, delay: float) -> None:
    threading.Timer(delay, inject, args=(sig,)).start()


def detected(error: Exception) -> None:
    say(f"DETECTED {time.monotonic():.6f} {' '.join(str(error).split())}")
    os._exit(3)  # no shutdown negotiation with a failed job


def run_until_error(step) -> None:
    """Calls step(i) until it raises KoloError (reported); gives up after 120 s."""
    give_up = time.monotonic() + 120
    i = 0
    try:
        while time.monotonic() < give_up:
            step(i)
            i += 1
    except kolo.KoloError as error:
        detected(error)
    say(f"UNEXPECTED collectives kept succeeding for 120 s ({i} steps)")
    os._exit(4)


def slow_proxy(delay: float, prompt: int) -> int:
    """A TCP proxy to the job's rendezvous server that holds every reply `delay` seconds, except
    the first `prompt` reads from the server on each connection (the authentication); returns its
    port. Requests go through at once."""
    target = (os.environ["KOLO_RENDEZVOUS_ADDR"], int(os.environ["KOLO_RENDEZVOUS_PORT"]))
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(client: socket.socket) -> None:
        server = socket.create_connection(target)
        replies = 0
        with client, server:
            while True:
                ready, _, _ = select.select([client, server], [], [])
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    if source is server:
                        replies += 1
                        if replies > prompt:
                            time.sleep(delay)
                        client.sendall(data)
                    else:
                        server.sendall(data)

    def accept() -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=pump, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def intrude() -> str:
    """A kolo process with this job's rank 1 identity but another job's secret."""
    env = dict(os.environ, KOLO_SECRET="ab" * (len(os.environ["KOLO_SECRET"]) // 2),
               KOLO_RANK="1", HOROVOD_RANK="1", KOLO_START_TIMEOUT="3")
    env.pop("KOLO_LAUNCHER_PID", None)
    proc = subprocess.run([sys.executable, "-c", "import kolo; kolo.init()"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    return f"rc={proc.returncode} {' '.join(proc.stdout.split())[-300:]}"


def listening_ports(pid: int) -> list[int]:
    """The TCP ports process `pid` listens on: its socket inodes (/proc/PID/fd) matched against
    the LISTEN rows (state 0A) of /proc/net/tcp and tcp6. Nothing of the job's secret needed."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def mesh_intrude(deadline: float) -> str:
    """Connects to this rank's mesh listener while init() waits for its peers, reads the
    greeting, sends a forged proof and then bytes that a rank reading on would take for a hello
    (and answer with a status byte), and says how the rank ended the connection: "closed" (no
    byte back: neither its proof nor a hello reply), "reset", or "answered N" (N bytes back)."""
    ports: list[int] = []
    while not ports and time.monotonic() < deadline:
        ports = listening_ports(os.getpid())
        time.sleep(0.01)
    if not ports:
        return "no-listener"
    with socket.create_connection(("127.0.0.1", ports[0]), timeout=30) as conn:
        greeting = b""
        while len(greeting) < 40:  # magic (8) + the server's nonce (32)
            chunk = conn.recv(40 - len(greeting))
            if not chunk:
                return f"no-greeting {greeting!r}"
            greeting += chunk
        try:
            conn.sendall(os.urandom(64) + b"\x01" * 64)  # forged proof, then a would-be hello
            answer = conn.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return f"greeting={greeting[:8].decode()} reset"
        return f"greeting={greeting[:8].decode()} " + (
            "closed" if not answer else f"answered {len(answer)}")


def finish_healthy_job(rank: int, name: str) -> None:
    """Twenty checked allreduces and a clean shutdown: the job was not harmed."""
    data = np.ones(1000, np.float32)
    for step in range(20):
        kolo.allreduce_(data, op=kolo.Sum, name=name)
        assert np.all(data == kolo.size() ** (step + 1)), data[:3]
    kolo.shutdown()
    say(f"rank {rank} OK")


def main() -> None:
    victim, phase, sig_name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sig = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP}[sig_name]
    me = int(os.environ.get("KOLO_RANK", os.environ.get("HOROVOD_RANK", "-1")))
    say(f"SHM {shm_prefix()}")

    if phase.startswith("slowstore:"):
        os.environ["KOLO_RENDEZVOUS_ADDR"] = "127.0.0.1"
        delay, *prompt = phase.split(":")[1:]
        os.environ["KOLO_RENDEZVOUS_PORT"] = str(slow_proxy(float(delay), int(*prompt or [0])))
        start = time.monotonic()
        say(f"FAULT {start:.6f}")  # every rank: its first request meets the slow store
        try:
            kolo.init()
        except kolo.KoloError as error:
            detected(error)
        say(f"INIT {time.monotonic() - start:.2f}")
        finish_healthy_job(me, "after.slow.start")
        return

    if phase == "meshintruder":
        # Rank 0's mesh listener exists while its init() waits for the others: the others come
        # 2 s late, and an intruder thread in rank 0's process knocks on the listener first.
        outcome = {}
        if me == 0:
            intruder = threading.Thread(target=lambda: outcome.update(
                what=mesh_intrude(time.monotonic() + 30)), daemon=True)
            intruder.start()
        else:
            time.sleep(2.0)
        kolo.init()
        if me == 0:
            intruder.join(timeout=30)
            say(f"MESHINTRUDER {outcome.get('what', 'still running')}")
        finish_healthy_job(me, "after.mesh.intruder")
        return

    if phase == "bootstrap":
        if me == victim:
            inject(sig)
        try:
            kolo.init()
            run_until_error(lambda i: kolo.allreduce(np.ones(4, np.float32), name=f"s{i}"))
        except kolo.KoloError as error:
            detected(error)

    kolo.init()
    rank = kolo.rank()
    warm = np.ones(1024, np.float32)
    kolo.allreduce_(warm, name="warmup")
    say(f"READY {rank} {os.getpid()}")

    if phase == "forever":
        run_until_error(lambda i: kolo.allreduce_(warm, name="steady"))
    elif phase == "intruder":
        if rank == 0:
            say(f"INTRUDER {intrude()}")
        finish_healthy_job(rank, "after.intruder")
        return
    elif phase == "negotiation":
        if rank == victim:
            inject(sig)
        run_until_error(lambda i: kolo.allreduce_(warm, name=f"only.survivors.{i}"))
    elif phase == "allreduce":
        big = np.ones(64 * MIB // 4, np.float32)
        if rank == victim:
            inject_later(sig, 0.5)
        run_until_error(lambda i: kolo.allreduce_(big, op=kolo.Sum, name="big"))
    elif phase == "arena":
        small = np.ones(4096, np.float32)  # 16 KiB: through the arena even when oversubscribed
        if rank == victim:
            inject_later(sig, 0.3)
        run_until_error(lambda i: kolo.allreduce_(small, op=kolo.Sum, name="small"))
    elif phase == "aftershutdown":
        # The shutdown agreement completes on every rank; then the victim freezes before it can
        # exit, while the others exit 0: nothing fails, only kolorun can notice.
        kolo.shutdown()
        if rank == victim:
            inject(sig)
            os._exit(5)  # only reached if continued
        say(f"rank {rank} OK")
        return
    elif phase == "shutdown":
        if rank == victim:
            inject(sig)
        # The victim is gone or frozen before the others leave: its background thread cannot
        # take part in their shutdown (were it still running, the job would shut down cleanly).
        time.sleep(0.5)
        say(f"SHUTDOWN {time.monotonic():.6f}")
        try:
            kolo.shutdown()
        except kolo.KoloError as error:
            detected(error)
        say("UNEXPECTED shutdown returned without an error")
        os._exit(4)
    if rank == victim:  # only reached for a STOP that was continued: leave quietly
        os._exit(5)


if __name__ == "__main__":
    main()
