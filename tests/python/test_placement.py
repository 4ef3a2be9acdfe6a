"""Default placement (issue 26): which CPUs each rank and its threads may use, read from inside
real ranks (os.sched_getaffinity, /proc/self/task/*/status) under kolorun, under a kolorun that
inherited a smaller mask (taskset), with bind-to none, oversubscribed, and under mpirun."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from conftest import WORKERS, JobResult, kolorun_path, run_command, run_job

CPUS = sorted(os.sched_getaffinity(0))


def reports(job: JobResult, rank: int) -> dict:
    found = {}
    for line in job.lines_of(rank):
        key, sep, value = line.partition(": ")
        if sep and key in ("before", "placement", "threads", "self", "child", "pinned"):
            found[key] = json.loads(value)
    return found


def parse_list(text: str) -> set[int]:
    cpus = set()
    for item in text.split(","):
        first, _, last = item.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def assert_threads_inside(report: dict, allowed: set[int], rank: int) -> None:
    for thread, text in report["threads"].items():
        assert parse_list(text) == allowed, f"rank {rank}: thread {thread} may use {text}"
    assert any(name.startswith("kolo-background/") for name in report["threads"]), report


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
@pytest.mark.parametrize("np_", [2, 3])
def test_each_rank_gets_its_own_share_of_the_jobs_cpus(np_):
    if np_ > len(CPUS):
        pytest.skip(f"{np_} ranks on {len(CPUS)} CPUs is oversubscribed (tested below)")
    job = run_job(np_, "placement_report.py", timeout=180)
    job.assert_ok(np_)
    shares = []
    for rank in range(np_):
        report = reports(job, rank)
        share = set(report["self"])
        assert set(report["before"]) == share, report  # kolorun started it there
        assert share and share < set(CPUS), f"rank {rank}: {report}"
        assert report["placement"]["cpus"] == sorted(share)
        assert report["placement"]["job_cpus"] == CPUS
        assert report["placement"]["threads"] == len(share)
        assert_threads_inside(report, share, rank)
        assert set(report["child"]) == share, f"rank {rank}: a forked worker left the share"
        shares.append(share)
    assert set().union(*shares) == set(CPUS)
    assert sum(len(share) for share in shares) == len(CPUS), f"shares overlap: {shares}"
    # Local rank order follows CPU order.
    assert [min(share) for share in shares] == sorted(min(share) for share in shares)


@pytest.mark.skipif(len(CPUS) < 2 or shutil.which("mpirun") is None,
                    reason="needs 2 CPUs and mpirun")
def test_a_thread_the_user_pinned_before_init_keeps_its_cpu():
    # Under an mpirun that did not bind, the ranks place themselves at init, moving the threads
    # they already have (under kolorun they start placed: nothing to move).
    from test_mpirun import MpiJob
    raw = mpirun_report(2, ("--bind-to", "none"), "pinned")
    job = MpiJob(raw.returncode, raw.output)
    job.assert_ok(2)
    for rank in range(2):
        report = reports(job, rank)
        assert report["pinned"] == [CPUS[-1]], report
        # Everything else moved: only the pinned thread may be outside the rank's share.
        outside = [name for name, text in report["threads"].items()
                   if parse_list(text) != set(report["self"])]
        assert len(outside) <= 1, f"rank {rank}: {report}"


def test_the_mask_kolorun_inherited_is_the_jobs():
    # kolorun under taskset: the job may use one CPU, whatever the machine has.
    cpu = CPUS[-1]
    cmd = ["taskset", "-c", str(cpu), kolorun_path(), "-np", "2", sys.executable,
           str(WORKERS / "placement_report.py")]
    job = run_command(cmd, timeout=180)
    job.assert_ok(2)
    for rank in range(2):
        report = reports(job, rank)
        assert report["placement"]["job_cpus"] == [cpu], report
        assert report["self"] == [cpu]
        assert report["placement"]["threads"] == 1
        assert "more ranks than CPUs" in report["placement"]["summary"]
        assert_threads_inside(report, {cpu}, rank)


@pytest.mark.skipif(len(CPUS) < 4, reason="needs 4 CPUs to give 2 ranks 2 of them")
def test_an_inherited_mask_of_several_cpus_is_split():
    mask = CPUS[1:3]
    cmd = ["taskset", "-c", ",".join(map(str, mask)), kolorun_path(), "-np", "2",
           sys.executable, str(WORKERS / "placement_report.py")]
    job = run_command(cmd, timeout=180)
    job.assert_ok(2)
    assert [reports(job, rank)["self"] for rank in range(2)] == [[mask[0]], [mask[1]]]


def test_oversubscribed_ranks_share_every_cpu_with_one_thread_each():
    np_ = len(CPUS) + 1  # np 3 on 2 CPUs
    job = run_job(np_, "placement_report.py", timeout=240)
    job.assert_ok(np_)
    for rank in range(np_):
        report = reports(job, rank)
        assert report["self"] == CPUS, report
        assert report["placement"]["threads"] == 1
        assert_threads_inside(report, set(CPUS), rank)


@pytest.mark.parametrize("variable", ["KOLO_BIND_TO", "HOROVOD_BIND_TO"])
def test_bind_to_none_leaves_every_rank_on_every_cpu(variable):
    job = run_job(2, "placement_report.py", env={variable: "none"}, timeout=180)
    job.assert_ok(2)
    for rank in range(2):
        report = reports(job, rank)
        assert report["self"] == CPUS, report
        assert report["placement"]["threads"] is None
        assert "bind-to none" in report["placement"]["summary"]
        assert_threads_inside(report, set(CPUS), rank)


def test_kolorun_bind_to_none_flag_and_the_header_line():
    job = run_job(2, "placement_report.py", launcher_args=("--bind-to", "none", "--verbose"),
                  timeout=180)
    job.assert_ok(2)
    assert "placement: none (bind-to none)" in job.output, job.output
    for rank in range(2):
        assert reports(job, rank)["self"] == CPUS


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_kolorun_starts_each_rank_on_its_share_and_says_so():
    cmd = [kolorun_path(), "-np", "2", "--verbose", sys.executable, "-c",
           "import os, kolo; print('start', sorted(os.sched_getaffinity(0)), "
           "os.environ.get('OMP_NUM_THREADS'), os.environ.get('KOLO_CPU_SHARE')); kolo.init(); "
           "print(kolo.placement()['summary']); print(f'rank {kolo.rank()} OK')"]
    job = run_command_without_omp(cmd, {k: v for k, v in os.environ.items()
                                        if k != "OMP_NUM_THREADS"})
    job.assert_ok(2)
    header = [line for line in job.output.splitlines() if "placement: 2 local rank(s)" in line]
    assert len(header) == 1, job.output
    for rank in range(2):
        start = next(x for x in job.lines_of(rank) if x.startswith("start"))
        cpus = json.loads(start.split(" ", 1)[1].split("]")[0] + "]")
        assert set(cpus) < set(CPUS), start  # before any of kolo's code ran
        omp, share = start.split("]", 1)[1].split()
        assert parse_list(share) == set(cpus), start
        assert 1 <= int(omp) <= len(cpus), start  # its physical cores
        assert any(x.startswith("placed by kolorun on CPUs") for x in job.lines_of(rank))


def test_a_bad_bind_to_names_the_variable():
    job = run_job(2, "placement_report.py", env={"KOLO_BIND_TO": "socket"}, timeout=180)
    assert job.returncode != 0
    assert "KOLO_BIND_TO='socket'" in job.output, job.output
    job = run_job(2, "placement_report.py", launcher_args=("--bind-to", "sockets"), timeout=180)
    assert job.returncode != 0
    assert "BIND_TO='sockets'" in job.output, job.output
    assert "rank 0 OK" not in job.output  # refused before any rank started


def mpirun_report(np_: int, binding: tuple[str, ...], *args: str) -> JobResult:
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--tag-output", "-np", str(np_),
           *binding, "-x", "PATH", "-x", "PYTHONPATH", "-mca", "pml", "ob1", "-mca", "btl",
           "^openib", sys.executable, str(WORKERS / "placement_report.py"), *args]
    return run_command(cmd, timeout=180)


needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun")


@needs_mpirun
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_under_mpirun_without_binding_kolo_places_the_ranks():
    from test_mpirun import MpiJob
    job = mpirun_report(2, ("--bind-to", "none"))
    parsed = MpiJob(job.returncode, job.output)
    parsed.assert_ok(2)
    shares = [set(reports(parsed, rank)["self"]) for rank in range(2)]
    assert shares[0].isdisjoint(shares[1]) and shares[0] | shares[1] == set(CPUS), shares
    for rank in range(2):
        assert_threads_inside(reports(parsed, rank), shares[rank], rank)


@needs_mpirun
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_under_mpirun_that_bound_the_ranks_kolo_keeps_its_binding():
    from test_mpirun import MpiJob
    job = mpirun_report(2, ("--bind-to", "core", "--map-by", "core"))
    parsed = MpiJob(job.returncode, job.output)
    parsed.assert_ok(2)
    for rank in range(2):
        report = reports(parsed, rank)
        assert report["self"] == report["before"], report
        assert len(report["before"]) < len(CPUS), report  # mpirun did bind
        assert "OMPI_MCA_orte_bound_at_launch" in report["placement"]["summary"]


TORCH_WORKER = r"""
import os, sys
import torch
wanted = sys.argv[1]
if wanted != "default":
    torch.set_num_threads(int(wanted))
import horovod.torch as hvd
hvd.init()
share = sorted(os.sched_getaffinity(0))

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 2
    def __getitem__(self, index):
        return torch.tensor(sorted(os.sched_getaffinity(0)))

worker_cpus = next(iter(torch.utils.data.DataLoader(Data(), batch_size=1, num_workers=1)))
print("share:", share, "threads:", torch.get_num_threads(), "worker:", worker_cpus[0].tolist())
print(f"rank {hvd.rank()} OK", flush=True)
"""


def torch_lines(job: JobResult, np_: int) -> list[dict]:
    found = []
    for rank in range(np_):
        line = next(x for x in job.lines_of(rank) if x.startswith("share:"))
        share, rest = line[len("share: "):].split(" threads: ")
        threads, worker = rest.split(" worker: ")
        found.append({"share": json.loads(share), "threads": int(threads),
                      "worker": json.loads(worker)})
    return found


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
@pytest.mark.parametrize("launch", ["kolorun", "mpirun"])
def test_torch_threads_and_dataloader_workers_stay_in_the_share(launch):
    pytest.importorskip("torch")
    command = [sys.executable, "-c", TORCH_WORKER, "default"]
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if launch == "mpirun":
        if shutil.which("mpirun") is None:
            pytest.skip("needs mpirun")
        from test_mpirun import MpiJob
        cmd = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", "2", "--bind-to", "none",
               "-x", "PATH", "-x", "PYTHONPATH", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
               *command]
        raw = run_command_without_omp(cmd, env)
        job = MpiJob(raw.returncode, raw.output)
    else:
        job = run_command_without_omp([kolorun_path(), "-np", "2", *command], env)
    job.assert_ok(2)
    for rank, seen in enumerate(torch_lines(job, 2)):
        assert seen["threads"] == len(seen["share"]) < len(CPUS), f"rank {rank}: {seen}"
        assert seen["worker"] == seen["share"], f"rank {rank}: {seen}"


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_a_thread_count_the_user_chose_is_kept():
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    chosen = len(CPUS) + 1  # not torch's default: the user's
    job = run_command_without_omp(
        [kolorun_path(), "-np", "2", sys.executable, "-c", TORCH_WORKER, str(chosen)], env)
    job.assert_ok(2)
    assert [seen["threads"] for seen in torch_lines(job, 2)] == [chosen, chosen]
    env["OMP_NUM_THREADS"] = str(len(CPUS))
    job = run_command_without_omp(
        [kolorun_path(), "-np", "2", sys.executable, "-c", TORCH_WORKER, "default"], env)
    job.assert_ok(2)
    assert [seen["threads"] for seen in torch_lines(job, 2)] == [len(CPUS)] * 2


def run_command_without_omp(cmd: list[str], env: dict) -> JobResult:
    """run_command with exactly `env` (run_command adds to os.environ, which may set
    OMP_NUM_THREADS, the user's choice these tests must control)."""
    import subprocess
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=300, env=env)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{cmd[0]} did not finish within 300 s (hang?):\n{expired.stdout}")
    return JobResult(proc.returncode, proc.stdout)


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_elastic_workers_start_unbound_and_place_themselves_at_init():
    # Their local rank may change from round to round: kolorun leaves them on the job's CPUs and
    # each init() gives the worker its share for the round.
    job = run_job(2, "placement_report.py", launcher_args=("--min-np", "2", "-H", "localhost:2"),
                  timeout=180)
    job.assert_ok(2)
    shares = []
    for rank in range(2):
        report = reports(job, rank)
        assert report["before"] == CPUS, report
        assert_threads_inside(report, set(report["self"]), rank)
        shares.append(set(report["self"]))
    assert shares[0].isdisjoint(shares[1]) and shares[0] | shares[1] == set(CPUS), shares
