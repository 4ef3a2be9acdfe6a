"""Reports which CPUs this rank and each of its threads may use, before and after init.

Prints JSON lines: "before" (the process's mask at start), then after init "placement"
(kolo.placement()), "threads" ({thread name: Cpus_allowed_list} for every thread, read from
/proc/self/task/*/status), "child" (what a process forked after init may use, as a DataLoader
worker does) and, with the argument "pinned", "pinned" (a thread the script pinned to one CPU
before init keeps that CPU).
"""

import json
import os
import sys
import threading

import numpy as np

import kolo


def cpus_of(task: str) -> str:
    with open(f"/proc/self/task/{task}/status") as status:
        for line in status:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list for thread {task}")


def thread_masks() -> dict:
    masks = {}
    for task in sorted(os.listdir("/proc/self/task")):
        with open(f"/proc/self/task/{task}/comm") as comm:
            name = comm.read().strip()
        masks[f"{name}/{task}"] = cpus_of(task)
    return masks


def report(key: str, value) -> None:
    print(f"{key}: {json.dumps(value)}", flush=True)


before = sorted(os.sched_getaffinity(0))
report("before", before)
pinned_cpu = before[-1]
started = threading.Event()
finish = threading.Event()


def pinned_thread() -> None:
    os.sched_setaffinity(0, {pinned_cpu})  # on Linux, 0 is the calling thread
    started.set()
    finish.wait()


helper = None
if "pinned" in sys.argv[1:]:
    helper = threading.Thread(target=pinned_thread, name="user-pinned")
    helper.start()
    started.wait()

kolo.init()
report("placement", kolo.placement())
report("threads", thread_masks())
report("self", sorted(os.sched_getaffinity(0)))

read_end, write_end = os.pipe()
child = os.fork()
if child == 0:
    os.write(write_end, json.dumps(sorted(os.sched_getaffinity(0))).encode())
    os._exit(0)
os.close(write_end)
report("child", json.loads(os.read(read_end, 4096)))
os.waitpid(child, 0)
if helper is not None:
    report("pinned", sorted(os.sched_getaffinity(helper.native_id)))
    finish.set()
    helper.join()
# Every rank still runs collectives with its placement.
total = kolo.allreduce(np.ones(4), op=kolo.Sum, name="placement.sum")
assert list(total) == [kolo.size()] * 4, total
print(f"rank {kolo.rank()} OK", flush=True)
kolo.shutdown()
