"""Plays a rank killed between creating a shared-memory object and unlinking it: rank 0 creates
an object under this job's name prefix (the tag is SHA-256 of the secret, as the runtime
computes it) and kills itself with SIGKILL. The launcher must remove the object on exit."""

import hashlib
import os
import signal
import time

import kolo


def main() -> None:
    kolo.init()
    if kolo.rank() == 0:
        secret = os.environ["KOLO_SECRET"]
        tag = hashlib.sha256(f"kolo shm segment {secret}".encode()).hexdigest()[:16]
        path = f"/dev/shm/kolo-{tag}-0-arena-99"
        with open(path, "wb") as leftover:
            leftover.write(b"\0" * 4096)
        print(f"rank 0 left {os.path.basename(path)}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(30)  # the launcher ends this rank once rank 0 died


if __name__ == "__main__":
    main()
