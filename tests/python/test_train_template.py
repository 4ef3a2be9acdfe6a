"""examples/train.py (the training template) and examples/run_training.sh (the guides' launcher):
config loading, the resumable sampler, the LR schedule, rank-0-only artefacts, resume on another
world size, AMP on CPU, DDP under torchrun and the hostfile the launcher writes. Short runs on a
small slice of Fashion-MNIST."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import kolorun_path, run_command

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

import kolo  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRAIN = EXAMPLES / "train.py"
RUN_TRAINING = EXAMPLES / "run_training.sh"
FASHION = Path("/usr/share/datasets/fashion-mnist")
SMALL = ["data.train_subset=960", "data.test_subset=480", "data.batch_size=32",
         "train.log_interval=10"]
needs_fashion = pytest.mark.skipif(not FASHION.is_dir(),
                                   reason="Debian's dataset-fashion-mnist is not installed")

sys.path.insert(0, str(EXAMPLES))
from trainkit.config import ConfigError, load_config  # noqa: E402
from trainkit.data import ResumableSampler  # noqa: E402
from trainkit.schedule import LearningRate  # noqa: E402


def records(work_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (work_dir / "metrics.jsonl").read_text().splitlines()]


def epochs_of(work_dir: Path) -> dict[int, dict]:
    return {r["epoch"]: r for r in records(work_dir) if "event" not in r}


def train(np_: int, work_dir: Path, *flags: str, options: tuple[str, ...] = (),
          launcher: str | None = None, timeout: float = 240):
    cmd = [launcher or kolorun_path(), "-np", str(np_), sys.executable, str(TRAIN),
           "--config", str(EXAMPLES / "configs" / "fashion_cnn.py"), "--work-dir", str(work_dir),
           *flags, "--cfg-options", *SMALL, *options]
    return run_command(cmd, {"OMP_NUM_THREADS": "1"}, timeout)


# -- pieces, in process ------------------------------------------------------------------------

def test_python_and_yaml_configs_load_over_the_defaults_with_overrides():
    cnn = load_config(str(EXAMPLES / "configs" / "fashion_cnn.py"),
                      ["data.train_subset=100", "schedule.policy=constant", "model.width=8"])
    assert cnn["model"] == {"type": "cnn", "width": 8}
    assert cnn["data"]["train_subset"] == 100 and cnn["data"]["batch_size"] == 64
    assert cnn["schedule"]["policy"] == "constant" and cnn["optimizer"]["type"] == "SGD"
    pytest.importorskip("yaml", reason="PyYAML (scripts/setup.sh installs it)")
    transformer = load_config(str(EXAMPLES / "configs" / "fashion_transformer.yaml"))
    assert transformer["model"]["type"] == "transformer"
    # A file's optimizer replaces the default one whole: AdamW gets no SGD momentum.
    assert transformer["optimizer"] == {"type": "AdamW", "lr": 0.001, "weight_decay": 0.01}


def test_config_mistakes_are_errors_naming_the_file_and_key(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("data = dict(batch_sise=32)\n")
    with pytest.raises(ConfigError, match=r"bad\.py: unknown key 'data\.batch_sise'"):
        load_config(str(bad))
    bad.write_text("optimiser = dict(type='SGD')\n")
    with pytest.raises(ConfigError, match=r"unknown section 'optimiser'"):
        load_config(str(bad))
    with pytest.raises(ConfigError, match=r"'schedule' is not section\.key=value"):
        load_config(None, ["schedule"])
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "missing.py"))


def test_the_sampler_resumes_mid_epoch_on_another_world_size():
    dataset = list(range(53))
    # Without a position it deals exactly what torch's DistributedSampler deals.
    for size in (2, 3):
        for rank in range(size):
            ours = ResumableSampler(dataset, size, rank, seed=7)
            theirs = torch.utils.data.DistributedSampler(dataset, size, rank, seed=7)
            ours.set_position(4, 0)
            theirs.set_epoch(4)
            assert list(ours) == list(theirs)
    # 20 samples consumed on 2 ranks; 3 ranks deal the other 33, each once (plus padding).
    order = []
    for rank in range(3):
        sampler = ResumableSampler(dataset, 3, rank, seed=7)
        sampler.set_position(4, 20)
        assert len(sampler) == 11
        order.append(list(sampler))
    full = ResumableSampler(dataset, 1, 0, seed=7)
    full.set_position(4, 0)
    global_order = list(full)
    assert sorted(global_order) == dataset
    dealt = [i for part in order for i in part]
    assert set(dealt) == set(global_order[20:]) and len(dealt) == 33


def test_auto_scaled_lr_warms_up_from_the_base_lr_then_decays():
    schedule = {"epochs": 5, "warmup_epochs": 1, "policy": "cosine"}
    lr = LearningRate(0.1, 4, True, schedule)
    assert lr.at(0) == pytest.approx(0.1)
    assert lr.at(0.5) == pytest.approx(0.25)
    assert lr.at(1) == pytest.approx(0.4)
    assert lr.at(3) == pytest.approx(0.2)
    assert lr.at(5) == pytest.approx(0.0, abs=1e-12)
    plain = LearningRate(0.1, 4, False, dict(schedule, policy="constant"))
    assert plain.at(0) == plain.at(4.5) == pytest.approx(0.1)


# -- whole runs --------------------------------------------------------------------------------

@needs_fashion
def test_resume_on_three_ranks_continues_where_two_ranks_left_off(tmp_path):
    job = train(2, tmp_path, "--auto-scale-lr", options=("schedule.epochs=2",))
    assert job.returncode == 0, job.output
    # Rank 0 alone logs and writes; rank 1 prints nothing at INFO level.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "epoch_1.pth", "epoch_2.pth", "latest.pth", "metrics.jsonl", "train.log"]
    assert any("epoch 2/2: train loss" in line for line in job.lines_of(0)), job.output
    assert not any("INFO" in line for line in job.lines_of(1)), job.output
    assert "epoch 2/2: train loss" in (tmp_path / "train.log").read_text()
    first = epochs_of(tmp_path)
    assert set(first) == {1, 2} and first[2]["world_size"] == 2

    job = train(3, tmp_path, "--auto-scale-lr", "--resume", str(tmp_path / "latest.pth"),
                options=("schedule.epochs=3", "train.eval_on_resume=True"))
    assert job.returncode == 0, job.output
    assert any("resumed from" in line and "2 epoch(s) done" in line and "saved by 2 rank(s), "
               "now 3" in line for line in job.lines_of(0)), job.output
    resumed = next(r for r in records(tmp_path) if r.get("event") == "resumed")
    # The restored model is the saved one: the same test loss on 3 ranks as on 2.
    assert resumed["epoch"] == 2 and resumed["world_size"] == 3
    assert resumed["test_loss"] == pytest.approx(first[2]["test_loss"], rel=1e-4)
    assert resumed["test_acc"] == pytest.approx(first[2]["test_acc"], abs=1e-9)
    third = epochs_of(tmp_path)[3]
    assert third["world_size"] == 3 and third["train_loss"] < first[1]["train_loss"]
    assert (tmp_path / "epoch_3.pth").exists()
    saved = torch.load(tmp_path / "latest.pth", weights_only=False)
    assert saved["epoch"] == 3 and saved["world_size"] == 3 and saved["consumed"] == 0


@needs_fashion
def test_a_job_stopped_mid_epoch_resumes_at_the_same_sample_on_another_world_size(tmp_path):
    # latest.pth every 2 steps; the job is stopped as soon as one holds a mid-epoch position.
    cmd = [kolorun_path(), "-np", "2", sys.executable, str(TRAIN), "--work-dir", str(tmp_path),
           "--cfg-options", *SMALL, "schedule.epochs=20", "train.checkpoint_every_steps=2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    saved = None
    deadline = time.monotonic() + 240
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                saved = torch.load(tmp_path / "latest.pth", weights_only=False)
            except (OSError, RuntimeError, EOFError):
                saved = None
            if saved is not None and saved["consumed"] > 0:
                break
            time.sleep(0.05)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
    assert saved is not None and saved["consumed"] > 0, out
    saved = torch.load(tmp_path / "latest.pth", weights_only=False)  # the last one written
    done, consumed = saved["epoch"], saved["consumed"]

    job = run_command([kolorun_path(), "-np", "3", sys.executable, str(TRAIN), "--work-dir",
                       str(tmp_path), "--resume", str(tmp_path / "latest.pth"), "--cfg-options",
                       *SMALL, f"schedule.epochs={done + 1}"], {"OMP_NUM_THREADS": "1"},
                      timeout=240)
    assert job.returncode == 0, job.output
    start = [r for r in records(tmp_path) if r.get("event") == "start"][-1]
    assert start["first_epoch"] == done + 1 and start["consumed"] == consumed, start
    # The resumed epoch trains only the samples the stopped job had not reached (3 ranks pad
    # the rest to a multiple of 3).
    remaining = 960 - consumed
    trained = [r for r in records(tmp_path) if r.get("epoch") == done + 1][-1]
    assert trained["world_size"] == 3
    assert remaining <= trained["samples"] <= remaining + 2, (consumed, trained)


@needs_fashion
def test_amp_on_cpu_trains_in_bfloat16_under_horovodrun(tmp_path):
    horovodrun = shutil.which("horovodrun", path=str(Path(kolorun_path()).parent))
    assert horovodrun, "horovodrun is installed next to kolorun"
    job = train(2, tmp_path, "--amp", options=("schedule.epochs=1",), launcher=horovodrun)
    assert job.returncode == 0, job.output
    start = next(r for r in records(tmp_path) if r.get("event") == "start")
    assert start["amp"] == "torch.bfloat16" and start["launcher"] == "horovod"
    epoch = epochs_of(tmp_path)[1]
    assert math.isfinite(epoch["train_loss"]) and epoch["test_acc"] > 0.3, epoch
    assert epoch["peak_mem_mb"] > 0 and epoch["samples_per_s"] > 0


@needs_fashion
def test_a_missing_checkpoint_fails_on_every_rank_naming_it(tmp_path):
    job = train(2, tmp_path, "--resume", str(tmp_path / "nothing.pth"),
                options=("schedule.epochs=1",), timeout=120)
    assert job.returncode != 0, job.output
    for rank in range(2):
        assert any(f"rank {rank}: cannot read checkpoint" in line and "nothing.pth" in line
                   for line in job.lines_of(rank, "stderr")), job.output


@needs_fashion
def test_the_same_file_runs_ddp_under_torchrun_and_kolo_resumes_its_checkpoint(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(TRAIN), "--launcher", "ddp", "--config",
           str(EXAMPLES / "configs" / "fashion_mlp.py"), "--work-dir", str(tmp_path),
           "--cfg-options", *SMALL, "schedule.epochs=1"]
    job = run_command(cmd, {"OMP_NUM_THREADS": "1"}, timeout=240)
    assert job.returncode == 0, job.output
    assert next(r for r in records(tmp_path) if r.get("event") == "start")["launcher"] == "ddp"
    assert epochs_of(tmp_path)[1]["world_size"] == 2
    job = run_command([kolorun_path(), "-np", "2", sys.executable, str(TRAIN), "--config",
                       str(EXAMPLES / "configs" / "fashion_mlp.py"), "--work-dir", str(tmp_path),
                       "--resume", str(tmp_path / "latest.pth"), "--cfg-options", *SMALL,
                       "schedule.epochs=2"], {"OMP_NUM_THREADS": "1"}, timeout=240)
    assert job.returncode == 0, job.output
    assert set(epochs_of(tmp_path)) == {1, 2}


# -- the launcher script -----------------------------------------------------------------------

def launch_script(tmp_path: Path, *args: str, env: dict | None = None, timeout: float = 60):
    full = {"MPI_HOSTFILE": str(tmp_path / "mpi" / "hostfile"),
            "WORKER_HOST_FILE": str(tmp_path / "worker.host"), "TRAIN_PYTHON": sys.executable,
            "KOLORUN": kolorun_path(), "OMP_NUM_THREADS": "1", **(env or {})}
    return run_command(["bash", str(RUN_TRAINING), *args], full, timeout)


def test_the_launcher_writes_the_guides_hostfile_and_mpirun_line(tmp_path):
    (tmp_path / "worker.host").write_text(
        "worker-node-1\nworker-node-2\n\n# spare\nworker-node-3\n")
    job = launch_script(tmp_path, "--config", "c.py", "--work-dir", "w", "--amp",
                        "--auto-scale-lr", "--resume", "w/epoch_10.pth", "--slots-per-node", "4",
                        "--dry-run", env={"MPIRUN": "mpirun", "HOROVOD_LOG_LEVEL": "debug"})
    assert job.returncode == 0, job.output
    assert (tmp_path / "mpi" / "hostfile").read_text() == (
        "localhost slots=4\nworker-node-1 slots=4\nworker-node-2 slots=4\n"
        "worker-node-3 slots=4\n")
    line = next(l for l in job.output.splitlines() if "--allow-run-as-root" in l)
    assert f"mpirun --hostfile {tmp_path}/mpi/hostfile --allow-run-as-root -mca btl \\^openib " \
           "-np 16 -bind-to none -map-by slot" in line, line
    assert "-x PATH" in line and "-x HOROVOD_LOG_LEVEL" in line, line
    assert line.endswith("--config c.py --work-dir w --amp --auto-scale-lr --resume "
                         "w/epoch_10.pth"), line


def test_the_launcher_falls_back_to_kolorun_and_checks_its_flags(tmp_path):
    job = launch_script(tmp_path, "--slots-per-node", "2", "--dry-run",
                        env={"MPIRUN": "/nonexistent/mpirun"})
    assert job.returncode == 0, job.output
    assert (tmp_path / "mpi" / "hostfile").read_text() == "localhost slots=2\n"
    assert f"{kolorun_path()} -np 2 --hostfile {tmp_path}/mpi/hostfile" in job.output, job.output
    job = launch_script(tmp_path, "--total-processes", "9", "--slots-per-node", "8", "--dry-run")
    assert job.returncode != 0 and "more than the 8 slots" in job.output, job.output
    job = launch_script(tmp_path, "--slots-per-node", "two")
    assert job.returncode != 0 and "--slots-per-node must be a positive whole number, not " \
                                   "'two'" in job.output, job.output
    job = launch_script(tmp_path, "--epochs", "3")
    assert job.returncode != 0 and "unknown option '--epochs'" in job.output, job.output


@needs_fashion
@pytest.mark.skipif(shutil.which("mpirun") is None or not kolo._core.MPI_BUILT,
                    reason="needs Open MPI's mpirun and kolo's MPI plugin")
def test_the_launcher_trains_under_mpirun(tmp_path):
    work = tmp_path / "work"
    job = launch_script(tmp_path, "--config", str(EXAMPLES / "configs" / "fashion_cnn.py"),
                        "--work-dir", str(work), "--slots-per-node", "2", "--", "--cfg-options",
                        *SMALL, "schedule.epochs=1", timeout=240)
    assert job.returncode == 0, job.output
    assert epochs_of(work)[1]["world_size"] == 2
    assert (work / "epoch_1.pth").exists() and (work / "latest.pth").exists()
