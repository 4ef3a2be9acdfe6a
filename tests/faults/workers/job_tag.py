"""The prefix of this job's objects in /dev/shm, as src/transport/shm/job_names.cc names them, so
a test can look for its own job's leftovers on a machine where other jobs run too."""

import hashlib
import os


def shm_prefix() -> str:
    secret = os.environ.get("KOLO_SECRET", "")
    tag = hashlib.sha256(f"kolo shm segment {secret}".encode()).hexdigest()[:16]
    return f"kolo-{tag}-"
