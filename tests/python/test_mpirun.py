"""Jobs started by Open MPI's mpirun (no kolorun): rendezvous over MPI, kolo's transports or the
MPI backend (HOROVOD_CPU_OPERATIONS=mpi), `kolorun --mpi`, the MNIST example, and failures."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from conftest import WORKERS, JobResult, kolorun_path, run_command

import kolo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FASHION = Path("/usr/share/datasets/fashion-mnist")
# mpirun --tag-output tags each write, not each line: "[jobid,rank]<stdout>:" starts every chunk,
# and chunks of different ranks may share a line (an unbuffered print writes its newline apart).
_TAG = re.compile(r"\[\d+,(\d+)\]<(stdout|stderr)>:")


class MpiJob(JobResult):
    """Output of `mpirun --tag-output`, put back together per rank and stream."""

    def lines_of(self, rank: int, stream: str = "stdout") -> list[str]:
        text = []
        tags = list(_TAG.finditer(self.output))
        for tag, following in zip(tags, tags[1:] + [None]):
            if int(tag.group(1)) == rank and tag.group(2) == stream:
                end = following.start() if following else len(self.output)
                text.append(self.output[tag.end():end])
        return "".join(text).splitlines()


def mpirun(np: int, *command: str, mpi_flags: tuple[str, ...] = (), env: dict | None = None,
           timeout: float = 150, oversubscribe: bool = True) -> MpiJob:
    """The issue's command line: mpirun --allow-run-as-root -np N -bind-to none -map-by slot
    -x ... -mca pml ob1 -mca btl ^openib (plus --oversubscribe unless a hostfile gives the slots:
    the test machine may have fewer cores than ranks)."""
    extra = ("--oversubscribe",) if oversubscribe else ()
    cmd = ["mpirun", "--allow-run-as-root", *extra, "--tag-output", "-np", str(np),
           "-bind-to", "none", "-map-by", "slot", "-x", "NCCL_DEBUG=INFO", "-x", "PATH",
           "-x", "PYTHONPATH", "-mca", "pml", "ob1", "-mca", "btl", "^openib", *mpi_flags,
           *command]
    job = run_command(cmd, {"OMP_NUM_THREADS": "1", **(env or {})}, timeout)
    return MpiJob(job.returncode, job.output)


def plugin_built() -> bool:
    return bool(kolo._core.MPI_BUILT)


needs_plugin = pytest.mark.skipif(not plugin_built(),
                                  reason="kolo's MPI plugin is not built (libopenmpi-dev)")


@needs_plugin
@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("backend", ["gloo", "mpi"])
def test_every_collective_and_dtype_under_mpirun(np, backend):
    job = mpirun(np, sys.executable, str(WORKERS / "mpi_collectives.py"), str(np), backend,
                 mpi_flags=("-x", f"HOROVOD_CPU_OPERATIONS={backend}"))
    job.assert_ok(np)


@needs_plugin
@pytest.mark.parametrize("np, backend", [(2, "gloo"), (3, "mpi")])
def test_collectives_worker_under_mpirun(np, backend):
    job = mpirun(np, sys.executable, str(WORKERS / "collectives.py"), str(np),
                 mpi_flags=("-x", f"KOLO_CPU_OPERATIONS={backend}"))
    job.assert_ok(np)


@needs_plugin
def test_kolorun_mpi_launches_through_mpirun():
    # KOLORUN_PATH first: a pyenv python puts its own bin (an installed kolorun) first on PATH.
    kolorun = os.environ.get("KOLORUN_PATH") or kolorun_path()
    cmd = [kolorun, "--mpi", "-np", "3", "--mpi-args", "--oversubscribe",
           sys.executable, str(WORKERS / "mpi_collectives.py"), "3", "mpi"]
    job = run_command(cmd, {"OMP_NUM_THREADS": "1"}, timeout=150)
    MpiJob(job.returncode, job.output).assert_ok(3)


@needs_plugin
@pytest.mark.skipif(not FASHION.is_dir(), reason="Debian's dataset-fashion-mnist is not installed")
def test_mnist_example_under_mpirun_with_a_hostfile(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=8\n")
    job = mpirun(2, sys.executable, str(EXAMPLES / "pytorch_mnist.py"), "--epochs", "1",
                 "--max-steps", "30", "--checkpoint-dir", str(tmp_path),
                 mpi_flags=("--hostfile", str(hostfile), "-x", "LD_LIBRARY_PATH"), timeout=240,
                 oversubscribe=False)
    assert job.returncode == 0, job.output
    out = "\n".join(job.lines_of(0))
    assert "Test set: Average loss" in out and "test accuracy" in out, job.output
    assert (tmp_path / "checkpoint-1.pt").exists()
    assert not any(line.startswith("Train Epoch") for line in job.lines_of(1)), job.output


def test_without_the_plugin_the_error_says_what_to_install():
    job = mpirun(2, sys.executable, "-c", "import kolo; kolo.init()",
                 mpi_flags=("-x", "KOLO_MPI_PLUGIN=/nonexistent/libkolo_mpi.so"), timeout=60)
    assert job.returncode != 0, job.output
    for rank in range(2):
        err = "\n".join(job.lines_of(rank, "stderr"))
        assert "OMPI_COMM_WORLD_SIZE=2" in err and "libopenmpi-dev" in err, job.output
        assert "/nonexistent/libkolo_mpi.so: no such file" in err, job.output


@needs_plugin
@pytest.mark.parametrize("backend", ["gloo", "mpi"])
def test_a_killed_rank_ends_the_job_instead_of_hanging(backend):
    # dead_peer.py: rank 1 SIGKILLs itself after a first allreduce. mpirun notices and ends the
    # job; survivors on kolo's transports also see the dead peer themselves within seconds.
    job = mpirun(3, sys.executable, str(WORKERS / "dead_peer.py"), "1",
                 mpi_flags=("-x", f"KOLO_CPU_OPERATIONS={backend}", "-x", "KOLO_PEER_TIMEOUT=5"),
                 timeout=90)
    assert job.returncode != 0, job.output
    assert "signal 9" in job.output or "Killed" in job.output, job.output


@needs_plugin
@pytest.mark.parametrize("np, how", [(2, "raise"), (3, "raise"), (2, "3")])
def test_a_failing_rank_ends_the_job_while_the_others_sleep(np, how):
    # The failing rank (an uncaught exception, or sys.exit(3)) skips MPI_Finalize, which would
    # wait for the sleepers (backends/mpi_plugin.cc); mpirun then ends the job (Horovod's
    # test_failed_run: within a minute, not after the others' 120 s).
    started = time.monotonic()
    job = mpirun(np, sys.executable, str(WORKERS / "mpi_failing_rank.py"), how, "120",
                 timeout=100)
    elapsed = time.monotonic() - started
    assert job.returncode != 0, job.output
    assert all(f"rank {rank} ready" in job.lines_of(rank) for rank in range(np)), job.output
    if how == "raise":
        # --tag-output tags each write: the traceback's line comes back in pieces.
        assert "RuntimeError: rank 1 fails outside any collective" in \
            "\n".join(job.lines_of(1, "stderr")), job.output
    else:
        assert "Exit code:    3" in job.output, job.output
    assert "woke up" not in job.output, job.output
    assert elapsed < 60, f"the job took {elapsed:.0f} s:\n{job.output}"


@needs_plugin
def test_a_rank_ending_normally_still_waits_for_the_others():
    # Status 0 finalizes MPI as before: the early rank waits, the sleeper finishes, the job is OK.
    job = mpirun(2, sys.executable, str(WORKERS / "mpi_failing_rank.py"), "0", "3", timeout=60)
    assert job.returncode == 0, job.output
    assert "rank 0 woke up" in job.lines_of(0), job.output


@needs_plugin
def test_init_comm_takes_every_rank_and_refuses_a_subset():
    args = [sys.executable, str(WORKERS / "mpi_init_comm.py"), "2"]
    try:
        import mpi4py  # noqa: F401

        args.append("mpi4py")
    except ImportError:
        pass  # the mpi4py half is skipped; lists of ranks are still checked
    mpirun(2, *args).assert_ok(2)


@needs_plugin
@pytest.mark.parametrize("launcher_env, size_variable", [
    ({"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "1"}, "SLURM_NTASKS"),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, "PMI_SIZE"),
])
def test_a_launcher_that_gave_mpi_no_job_is_an_error_not_a_world_of_one(launcher_env,
                                                                        size_variable):
    # srun/hydra variables but no MPI job behind them (here: no launcher at all): MPI comes up as
    # a world of one, and init() must say so instead of running alone or waiting for peers.
    job = run_command([sys.executable, "-c", "import kolo; kolo.init()"], launcher_env, timeout=60)
    assert job.returncode != 0, job.output
    assert f"rank 1 of 2 ({size_variable})" in job.output, job.output
    assert "rank 0 of 1" in job.output, job.output


@needs_plugin
@pytest.mark.parametrize("np", [2, 3])
def test_process_sets_from_mpi_communicators(np):
    pytest.importorskip("mpi4py", reason="scripts/setup.sh installs mpi4py")
    mpirun(np, sys.executable, str(WORKERS / "mpi_comm_process_sets.py")).assert_ok(np)
