"""A horovodrun launch line that uses every flag of horovodrun's launch.py runs under kolorun.

The flags that drive a kolo mechanism reach every rank as kolo's variable (and Horovod's); the
flags kolo has no mechanism for reach the ranks as Horovod's variable and print one warning each
saying what kolo does instead. The per-flag parsing is covered in
tests/cpp/launcher/cli/horovodrun_flags_test.cc; this runs real jobs.
"""

import sys

import pytest

from conftest import kolorun_path, run_command

# Every non-elastic horovodrun flag that changes what the ranks see, with a value.
FLAGS = [
    "--disable-cache", "--start-timeout", "60", "--verbose",
    "--fusion-threshold-mb", "32", "--cycle-time-ms", "2", "--cache-capacity", "512",
    "--hierarchical-allreduce", "--hierarchical-allgather", "--torus-allreduce",
    "--no-autotune", "--autotune-bayes-opt-max-samples", "20",
    "--autotune-gaussian-process-noise", "0.8",
    "--no-timeline-mark-cycles", "--stall-check", "--stall-check-warning-time-seconds", "50",
    "--mpi-threads-disable", "--tcp", "--binding-args=-bind-to core", "--num-nccl-streams", "2",
    "--thread-affinity", "0", "--gloo-timeout-seconds", "45", "--log-level", "WARNING",
    "--log-with-timestamp", "--gloo", "--jsrun",
]

# Variables each rank must see: kolo's (it acts on them) and Horovod's (as horovodrun sets them).
EXPECTED = {
    "KOLO_FUSION_THRESHOLD": "33554432", "KOLO_CYCLE_TIME": "2", "KOLO_CACHE_CAPACITY": "512",
    "KOLO_HIERARCHICAL_ALLREDUCE": "1", "HOROVOD_HIERARCHICAL_ALLREDUCE": "1",
    "KOLO_AUTOTUNE": "0", "KOLO_TIMELINE_MARK_CYCLES": "0", "KOLO_STALL_CHECK_DISABLE": "0",
    "KOLO_STALL_CHECK_TIME_SECONDS": "50", "KOLO_PEER_TIMEOUT": "45",
    "HOROVOD_GLOO_TIMEOUT_SECONDS": "45", "HOROVOD_HIERARCHICAL_ALLGATHER": "1",
    "HOROVOD_TORUS_ALLREDUCE": "1", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "20",
    "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE": "0.8", "HOROVOD_MPI_THREADS_DISABLE": "1",
    "HOROVOD_NUM_NCCL_STREAMS": "2", "KOLO_THREAD_AFFINITY": "0", "HOROVOD_THREAD_AFFINITY": "0",
    "KOLO_LOG_HIDE_TIME": "0", "HOROVOD_LOG_HIDE_TIME": "0", "NCCL_IB_DISABLE": "1",
}
# Flags that must each print one warning naming them.
WARNED = ["--hierarchical-allgather", "--torus-allreduce", "--autotune-bayes-opt-max-samples",
          "--autotune-gaussian-process-noise", "--mpi-threads-disable", "--num-nccl-streams",
          "--binding-args", "--jsrun"]

# Each rank starts kolo (so the settings must be valid for the core), runs an allreduce, and
# prints the variables it got.
WORKER = r"""
import os, sys
import numpy as np
import kolo
kolo.init()
total = kolo.allreduce(np.ones(4, dtype=np.float32), op=kolo.Sum)
assert total.tolist() == [kolo.size()] * 4, total
for name in sys.argv[1:]:
    print(f"{name}={os.environ.get(name, '<unset>')}")
print(f"rank {kolo.rank()} OK")
kolo.shutdown()
"""


@pytest.mark.parametrize("np_", [2, 3])
def test_every_horovodrun_flag_reaches_the_ranks(np_):
    cmd = [kolorun_path(), "-np", str(np_), *FLAGS, sys.executable, "-c", WORKER, *EXPECTED]
    job = run_command(cmd, timeout=180)
    job.assert_ok(np_)
    for rank in range(np_):
        seen = dict(line.split("=", 1) for line in job.lines_of(rank) if "=" in line)
        for name, value in EXPECTED.items():
            assert seen.get(name) == value, f"rank {rank}: {name}={seen.get(name)}\n{job.output}"
    warnings = [line for line in job.output.splitlines()
                if line.startswith("[kolorun] WARNING: ")]
    for flag in WARNED:
        about = [line for line in warnings if line.startswith(f"[kolorun] WARNING: {flag}")]
        assert len(about) == 1, f"{flag}: {about}\n{job.output}"
        assert "kolo" in about[0].split(flag, 1)[1]
    assert len(warnings) == len(WARNED), "\n".join(warnings)


def test_the_horovodrun_name_takes_the_same_flags():
    horovodrun = kolorun_path().rsplit("kolorun", 1)[0] + "horovodrun"
    cmd = [horovodrun, "-np", "2", "--no-hierarchical-allreduce", "--log-without-timestamp",
           "--no-torus-allreduce", "--no-hierarchical-allgather", "--no-mpi-threads-disable",
           sys.executable, "-c", WORKER, "KOLO_HIERARCHICAL_ALLREDUCE", "HOROVOD_LOG_HIDE_TIME"]
    job = run_command(cmd, timeout=120)
    job.assert_ok(2)
    assert "KOLO_HIERARCHICAL_ALLREDUCE=0" in job.lines_of(0)
    assert "HOROVOD_LOG_HIDE_TIME=1" in job.lines_of(1)
    # Flags asking for what kolo always does are silent.
    assert not [line for line in job.output.splitlines() if line.startswith("[kolorun]")], \
        job.output


# Each rank reports the CPUs its threads may run on; the background thread is the one pinned.
AFFINITY_WORKER = r"""
import os
import kolo
kolo.init()
allowed = set()
threads = []
for tid in os.listdir("/proc/self/task"):
    try:
        with open(f"/proc/self/task/{tid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
    except FileNotFoundError:  # a short-lived thread ended after the listing: no mask to check
        continue
    allowed.add(status["Cpus_allowed_list"].strip())
    threads.append(f"{status['Name'].strip()}={status['Cpus_allowed_list'].strip()}")
print("threads allowed:", ";".join(sorted(allowed)))
print("threads:", " ".join(sorted(threads)))
print(f"rank {kolo.rank()} OK")
kolo.shutdown()
"""


@pytest.mark.parametrize("np_", [2, 3])
def test_thread_affinity_pins_each_local_ranks_background_thread(np_):
    import os
    cpus = sorted(os.sched_getaffinity(0))
    cores = [cpus[i % len(cpus)] for i in range(np_)]  # one core per local rank (may repeat)
    cmd = [kolorun_path(), "-np", str(np_), sys.executable, "-c", AFFINITY_WORKER]
    job = run_command(cmd, env={"HOROVOD_THREAD_AFFINITY": ",".join(map(str, cores))},
                      timeout=180)
    job.assert_ok(np_)
    for rank in range(np_):
        line = next(x for x in job.lines_of(rank) if x.startswith("threads allowed:"))
        allowed = line.split(":", 1)[1].strip().split(";")
        # The whole job's output on failure: each thread's name and mask, and kolo's warnings.
        assert str(cores[rank]) in allowed, f"rank {rank}: {line}\n{job.output}"


def test_too_few_cores_pin_nothing_and_say_so():
    cmd = [kolorun_path(), "-np", "2", "--thread-affinity", "0", sys.executable, "-c",
           AFFINITY_WORKER]
    job = run_command(cmd, timeout=180)
    job.assert_ok(2)
    assert "one core per local rank is needed" in job.output, job.output


def test_log_with_timestamp_puts_a_timestamp_on_kolos_log_lines():
    import re
    cmd = [kolorun_path(), "-np", "2", "--log-with-timestamp", sys.executable, "-c",
           WORKER]
    job = run_command(cmd, env={"KOLO_NOT_A_SETTING": "1"}, timeout=180)
    job.assert_ok(2)
    stamped = re.compile(r"\[kolo rank \d/2\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} WARNING: "
                         r"KOLO_NOT_A_SETTING is not a kolo setting")
    for rank in range(2):
        assert any(stamped.search(line) for line in job.lines_of(rank, "stderr")), job.output
