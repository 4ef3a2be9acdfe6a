"""Smoke test of kolo's own Keras example (examples/keras_mnist.py): it trains offline on
Debian's Fashion-MNIST under horovodrun at 2 ranks and learns well beyond chance (10%)."""

import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import kolorun_path, run_command

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu==2.21.0")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FASHION = Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not FASHION.is_dir(), reason="Debian's dataset-fashion-mnist is not installed")
def test_keras_mnist_example_trains_under_horovodrun():
    horovodrun = shutil.which("horovodrun", path=str(Path(kolorun_path()).parent))
    assert horovodrun, "horovodrun is installed next to kolorun"
    result = run_command([horovodrun, "-np", "2", sys.executable,
                          str(EXAMPLES / "keras_mnist.py"), "--epochs", "1",
                          "--steps-per-epoch", "40"], timeout=300)
    assert result.returncode == 0, result.output
    found = re.search(r"test accuracy: ([0-9.]+)", result.output)
    assert found, result.output
    assert float(found.group(1)) > 0.5, result.output
