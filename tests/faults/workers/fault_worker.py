"""One rank of a fault-matrix job: the victim injects a fault into itself at a chosen phase, the
other ranks keep working and report how and when the job's failure reached them.

    fault_worker.py VICTIM PHASE SIGNAL

PHASE: bootstrap (before init), negotiation (others wait on a tensor the victim never submits),
allreduce (inside a 64 MiB allreduce), arena (inside small shared-memory arena allreduces),
shutdown (the others are in shutdown), forever (no fault: loop until killed from outside).
SIGNAL: KILL or STOP.

Lines for the test (CLOCK_MONOTONIC is one clock for every process of the machine, network
namespaces included, so times from different ranks compare):
    FAULT <t>                  the victim, just before signalling itself
    DETECTED <t> <message>     a survivor, when the error reached it
    UNEXPECTED <what>          a survivor whose collectives kept succeeding
A survivor exits with status 3 after detection (a failed job), as a training script would.
"""

import os
import signal
import sys
import threading
import time

import numpy as np

import kolo

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


def main() -> None:
    victim, phase, sig_name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sig = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP}[sig_name]
    me = int(os.environ.get("KOLO_RANK", os.environ.get("HOROVOD_RANK", "-1")))

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
    elif phase == "shutdown":
        if rank == victim:
            inject(sig)
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
