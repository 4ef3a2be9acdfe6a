"""Smoke tests of the PyTorch examples: they start, train a few steps and report (accuracy and
speed are the README command's and the benchmarks' business, not a test's)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import kolorun_path

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FASHION = Path("/usr/share/datasets/fashion-mnist")


def run(cmd: list[str], timeout: float = 120) -> str:
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{cmd} did not finish within {timeout} s:\n{expired.stdout}")
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}"
    return proc.stdout


@pytest.mark.skipif(not FASHION.is_dir(), reason="Debian's dataset-fashion-mnist is not installed")
def test_mnist_example_runs_under_horovodrun(tmp_path):
    horovodrun = shutil.which("horovodrun", path=str(Path(kolorun_path()).parent))
    assert horovodrun, "horovodrun is installed next to kolorun"
    out = run([horovodrun, "-np", "2", sys.executable, str(EXAMPLES / "pytorch_mnist.py"),
               "--epochs", "1", "--max-steps", "30", "--checkpoint-dir", str(tmp_path)])
    assert "Test set: Average loss" in out and "test accuracy" in out, out
    assert (tmp_path / "checkpoint-1.pt").exists()
    # Logs come from rank 0 only.
    assert not any(line.startswith("[1]<stdout>:Train Epoch") for line in out.splitlines()), out


def test_synthetic_benchmark_runs_on_three_ranks():
    out = run([kolorun_path(), "-np", "3", sys.executable,
               str(EXAMPLES / "pytorch_synthetic_benchmark.py"), "--model", "mlp",
               "--batch-size", "8", "--num-warmup-batches", "2", "--num-batches-per-iter", "2",
               "--num-iters", "2", "--fp16-allreduce", "--use-adasum"])
    assert "Total img/sec on 3 CPU(s)" in out and "Adasum" in out, out
