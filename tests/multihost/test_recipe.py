"""The guides' cluster recipe across fake hosts: examples/run_training.sh, started on ns1 (the
"localhost" of the hostfile, as the Volcano master pod), reads a worker.host naming ns2 and ns3,
writes the MPI hostfile and starts examples/train.py with Open MPI's mpirun, which reaches the
other namespaces' sshd itself (its own remote launch, no kolorun). The job is killed after 2
epochs and resumed from latest.pth on a different number of ranks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FASHION = Path("/usr/share/datasets/fashion-mnist")
# Small and quick, with epochs long enough (a few seconds here) to kill the job between two.
OPTIONS = ["data.train_subset=1920", "data.test_subset=600", "data.batch_size=32",
           "train.log_interval=20", "schedule.epochs=6", "train.eval_on_resume=True"]


def plugin_built() -> bool:
    import kolo

    return bool(kolo._core.MPI_BUILT)


pytestmark = [
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed"),
    pytest.mark.skipif(not FASHION.is_dir(), reason="dataset-fashion-mnist is not installed"),
]


def recipe_env(cluster, tmp_path: Path) -> dict[str, str]:
    return cluster.env(
        WORKER_HOST_FILE=str(tmp_path / "worker.host"),
        MPI_HOSTFILE=str(tmp_path / "mpi" / "hostfile"),
        TRAIN_PYTHON=sys.executable,
        OMP_NUM_THREADS="1",
        # Open MPI's own ssh launch, through the harness's ssh (its keys and known hosts), and
        # its daemons and ranks on the namespaces' network only (each host's docker0 has the
        # same address, which Open MPI must not pick).
        OMPI_MCA_plm_rsh_agent=str(cluster.bin / "ssh"),
        OMPI_MCA_oob_tcp_if_include="10.231.0.0/24",
        OMPI_MCA_btl_tcp_if_include="10.231.0.0/24",
        KOLO_IFACE="kolomh0",
    )


def launch(cluster, env: dict[str, str], work: Path, *flags: str) -> subprocess.Popen:
    cmd = cluster.command_on("ns1", "bash", str(EXAMPLES / "run_training.sh"), "--config",
           str(EXAMPLES / "configs" / "fashion_cnn.py"), "--work-dir", str(work),
           "--auto-scale-lr", "--slots-per-node", "1", *flags, "--", "--cfg-options", *OPTIONS)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)


def kill_group(proc: subprocess.Popen) -> str:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out, _ = proc.communicate(timeout=60)
    return out


def epochs_of(work: Path) -> dict[int, dict]:
    lines = (work / "metrics.jsonl").read_text().splitlines()
    return {r["epoch"]: r for r in map(json.loads, lines) if "event" not in r}


@pytest.mark.skipif(not plugin_built(), reason="kolo's MPI plugin is not built (libopenmpi-dev)")
def test_the_guides_recipe_runs_across_hosts_is_killed_and_resumes_on_fewer_ranks(
        fake_hosts, tmp_path):
    import torch

    (tmp_path / "worker.host").write_text("ns2\nns3\n")
    env = recipe_env(fake_hosts, tmp_path)
    work = tmp_path / "work"

    # 3 ranks: localhost (ns1, where the script runs), ns2 and ns3, one slot each.
    proc = launch(fake_hosts, env, work, "--total-processes", "3")
    deadline = time.monotonic() + 400
    try:
        while not (work / "epoch_2.pth").exists():
            if proc.poll() is not None:
                pytest.fail(f"the job ended before epoch 2:\n{proc.communicate()[0]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no epoch_2.pth within 400 s:\n{kill_group(proc)}")
            time.sleep(0.2)
    finally:
        out = kill_group(proc)
    fake_hosts.kill_leftovers()  # ranks that outlived their mpirun on ns2 and ns3
    assert (tmp_path / "mpi" / "hostfile").read_text() == (
        "localhost slots=1\nns2 slots=1\nns3 slots=1\n")
    assert "mpirun --hostfile" in out and "-np 3" in out, out
    assert "3 ranks (horovod) on 3 host(s)" in out, out
    first = epochs_of(work)
    assert first[1]["world_size"] == 3 and 6 not in first, out
    saved = torch.load(work / "latest.pth", weights_only=False)
    done = saved["epoch"]
    assert done >= 2 and saved["consumed"] == 0 and saved["world_size"] == 3

    # Resume from latest.pth on 2 ranks (ns1 and ns2).
    proc = launch(fake_hosts, env, work, "--total-processes", "2", "--resume",
                  str(work / "latest.pth"))
    try:
        out, _ = proc.communicate(timeout=500)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the resumed job did not finish within 500 s:\n{kill_group(proc)}")
    assert proc.returncode == 0, out
    assert "2 ranks (horovod) on 2 host(s)" in out, out
    assert "-np 2" in out and f"{done} epoch(s) done" in out and "saved by 3 rank(s), now 2" \
        in out, out
    records = [json.loads(line) for line in (work / "metrics.jsonl").read_text().splitlines()]
    restored = next(r for r in records if r.get("event") == "resumed")
    # The restored model is the one saved after epoch `done`, and training goes on from there.
    assert restored["epoch"] == done and restored["world_size"] == 2
    assert restored["test_loss"] == pytest.approx(first[done]["test_loss"], rel=1e-4)
    after = epochs_of(work)
    assert sorted(after) == list(range(1, 7))
    resumed = after[done + 1]
    assert resumed["world_size"] == 2
    assert resumed["train_loss"] < first[1]["train_loss"], (first, after)
    assert resumed["train_loss"] < 1.2 * first[done]["train_loss"], (first, after)
    assert after[6]["test_acc"] > 0.6, after[6]
    assert (work / "epoch_6.pth").exists()
