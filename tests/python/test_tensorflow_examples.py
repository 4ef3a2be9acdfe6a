"""TensorFlow examples end to end: kolo's own Keras example (examples/keras_mnist.py), and
Horovod's TensorFlow 2 examples run unchanged from a copy of Horovod's repository.

Horovod's examples are never part of kolo: $HOROVOD_SRC (default /tmp/horovod-src, as for
scripts/device_check.sh) is a checkout of horovod/horovod kept outside the repository, whose
examples/tensorflow2/ and examples/elastic/tensorflow2/ the tests run; they skip, saying so,
when it lacks them. They are Keras 2 code (``opt.variables()`` called,
``compile(experimental_run_tf_function=False)``), which Keras 3 refuses in Keras itself, so they
run on tf-keras (TF_USE_LEGACY_KERAS=1), as on any TensorFlow since 2.16.

This machine is offline: tests/python/offline_datasets/sitecustomize.py stands in for the
network, answering the examples' ``mnist.load_data`` with Debian's Fashion-MNIST in MNIST's npz
layout. The MNIST examples train for thousands of steps without a flag to shorten them, so
their tests watch the training get far enough to show it learns, then stop the job (SIGTERM to
the launcher); the synthetic benchmarks run to their end through their own flags."""

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import kolorun_path, run_command
from elastic_job import Job

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu==2.21.0")

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
FASHION = Path("/usr/share/datasets/fashion-mnist")
needs_fashion = pytest.mark.skipif(not FASHION.is_dir(),
                                   reason="Debian's dataset-fashion-mnist is not installed")
HOROVOD = Path(os.environ.get("HOROVOD_SRC", "/tmp/horovod-src")) / "examples"
needs_horovod = pytest.mark.skipif(
    not (HOROVOD / "tensorflow2").is_dir(),
    reason="$HOROVOD_SRC (default /tmp/horovod-src) holds no checkout of horovod/horovod's "
    "examples/tensorflow2")
needs_tf_keras = pytest.mark.skipif(
    importlib.util.find_spec("tf_keras") is None,
    reason="Horovod's examples are Keras 2 code: scripts/setup.sh installs tf-keras")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-bind-to", "none",
          "-x", "PATH", "-x", "PYTHONPATH", "-x", "TF_USE_LEGACY_KERAS", "-x", "KERAS_HOME",
          "-x", "OFFLINE_MNIST_NPZ"]


def horovodrun() -> str:
    path = shutil.which("horovodrun", path=str(Path(kolorun_path()).parent))
    assert path, "horovodrun is installed next to kolorun"
    return path


@needs_fashion
def test_keras_mnist_example_trains_under_horovodrun():
    result = run_command([horovodrun(), "-np", "2", sys.executable,
                          str(EXAMPLES / "keras_mnist.py"), "--epochs", "1",
                          "--steps-per-epoch", "40"], timeout=300)
    assert result.returncode == 0, result.output
    found = re.search(r"test accuracy: ([0-9.]+)", result.output)
    assert found, result.output
    assert float(found.group(1)) > 0.5, result.output


@pytest.fixture
def offline_env(tmp_path_factory):
    """The environment of a rank of Horovod's examples: tf-keras, and the stand-in for the
    network serving Debian's Fashion-MNIST as MNIST (an npz written once per session)."""
    if not FASHION.is_dir():
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    folder = tmp_path_factory.getbasetemp() / "offline_mnist"
    npz = folder / "mnist.npz"
    if not npz.exists():
        folder.mkdir(exist_ok=True)
        sys.path.insert(0, str(EXAMPLES))
        from mnist_idx import load_split
        (x_train, y_train), (x_test, y_test) = load_split(str(FASHION), True), load_split(
            str(FASHION), False)
        np.savez(npz, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    env = dict(os.environ)
    env.update({
        "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "OFFLINE_MNIST_NPZ": str(npz),
        "KERAS_HOME": str(folder / "keras_home"),  # nothing written to ~/.keras
        "PYTHONPATH": os.pathsep.join(
            [str(HERE / "offline_datasets"), *filter(None, [os.environ.get("PYTHONPATH")])])})
    return env


def stop(job: Job) -> None:
    """Ends a job that has shown what the test waited for: its launcher ends the ranks."""
    job.proc.send_signal(signal.SIGTERM)
    try:
        job.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        job.proc.kill()
        job.proc.wait()
        pytest.fail("the launcher did not end on SIGTERM:\n" + job.output)


def progress(output: str, total: int, rank_tag: str = "") -> list[tuple[int, float]]:
    """(step, accuracy) of every Keras progress-bar line 'N/total [...] - accuracy: A'."""
    return [(int(m.group(1)), float(m.group(2))) for m in re.finditer(
        re.escape(rank_tag) + r"\s*(\d+)/" + str(total) + r" \[.*?accuracy: ([0-9.]+)", output)]


@needs_horovod
@needs_tf_keras
def test_tensorflow2_mnist_under_horovodrun_learns(offline_env):
    # 10000 / size steps; rank 0 prints the loss every 10 steps from 2.3 (chance) down.
    job = Job([horovodrun(), "-np", "2", sys.executable,
               str(HOROVOD / "tensorflow2" / "tensorflow2_mnist.py")],
              offline_env, timeout=240)
    job.wait_for_line(r"Step #30\s")
    stop(job)
    losses = dict((int(s), float(v)) for s, v in re.findall(r"Step #(\d+)\s+Loss: ([0-9.]+)",
                                                            job.output))
    assert losses[0] > 2.0 and losses[30] < 0.7 * losses[0], job.output


@needs_horovod
@needs_tf_keras
def test_tensorflow2_keras_mnist_under_mpirun_learns(offline_env):
    job = Job([*MPIRUN, "--tag-output", sys.executable,
               str(HOROVOD / "tensorflow2" / "tensorflow2_keras_mnist.py")],
              offline_env, timeout=240)
    job.wait_for_line(r" 30/250 \[")
    stop(job)
    steps = dict(progress(job.output, 250))
    assert steps[30] > 0.4 and steps[1] < 0.3, job.output  # from chance (0.1) upwards


SYNTHETIC = ["--model", "MobileNetV3Small", "--batch-size", "4", "--num-iters", "2",
             "--num-batches-per-iter", "2", "--no-cuda"]


@needs_horovod
@needs_tf_keras
@pytest.mark.parametrize("script, launcher", [
    ("tensorflow2_synthetic_benchmark.py", "kolorun"),
    ("tensorflow2_keras_synthetic_benchmark.py", "mpirun")])
def test_synthetic_benchmark_runs_to_the_end(offline_env, script, launcher):
    flags = SYNTHETIC + (["--num-warmup-batches", "1"] if "keras" not in script else [])
    command = [sys.executable, str(HOROVOD / "tensorflow2" / script), *flags]
    prefix = [kolorun_path(), "-np", "2"] if launcher == "kolorun" else MPIRUN
    result = run_command([*prefix, *command], offline_env, timeout=300)
    assert result.returncode == 0, result.output
    total = re.search(r"Total img/sec on 2 CPU\(s\): ([0-9.]+)", result.output)
    assert total and float(total.group(1)) > 0, result.output


def rank_pid(launcher_pid: int, rank: int) -> int:
    """The pid of the launcher's child that runs `rank` (its KOLO_RANK)."""
    for child in Path(f"/proc/{launcher_pid}/task/{launcher_pid}/children").read_text().split():
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        if f"KOLO_RANK={rank}".encode() in environ:
            return int(child)
    pytest.fail(f"no child of the launcher runs rank {rank}")


@needs_horovod
@needs_tf_keras
def test_keras_mnist_elastic_goes_on_without_a_killed_worker(offline_env):
    # Two hosts of one slot each (two names of this machine): rank 1 is SIGKILLed mid-epoch, and
    # rank 0 resets to a job of one, whose epochs have 500 steps (500 // size).
    job = Job([kolorun_path(), "-np", "2", "--min-np", "1", "-H", "localhost:1,127.0.0.1:1",
               sys.executable,
               str(HOROVOD / "elastic" / "tensorflow2" / "tensorflow2_keras_mnist_elastic.py")],
              {**offline_env, "KOLO_PEER_TIMEOUT": "3"}, timeout=300)
    job.wait_for_line(r"\[1\]<stdout>:\s*20/250 \[")
    os.kill(rank_pid(job.proc.pid, 1), signal.SIGKILL)
    job.wait_for_line(r"\[kolorun\] elastic: rank 1 on host 127.0.0.1 lost \(killed by signal "
                      r"SIGKILL \(9\)\); continuing with 1 ranks")
    job.wait_for_line(r"\[0\]<stdout>:\s*20/500 \[")
    stop(job)
    assert "reset done: now rank 0 of 1" in job.output, job.output
    after = progress(job.output, 500, "[0]<stdout>:")
    assert after and after[-1][1] > 0.4, job.output
