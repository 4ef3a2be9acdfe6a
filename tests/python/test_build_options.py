"""A user's `pip install .` builds no C++ tests: KOLO_BUILD_TESTS is OFF unless asked for, and only
scripts/setup.sh (the test command's setup) asks for it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_does_not_turn_the_tests_on():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib needs Python 3.11")
    import tomllib
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    defines = settings["tool"]["scikit-build"].get("cmake", {}).get("define", {})
    assert "KOLO_BUILD_TESTS" not in defines, defines
    assert "version" in settings["project"]["dynamic"]


def test_setup_script_asks_for_the_tests():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "--config-settings=cmake.define.KOLO_BUILD_TESTS=ON" in setup


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_a_default_configure_has_no_test_targets(tmp_path):
    # Configure only (no compiling): the library, kolorun and the benches, no GoogleTest suites.
    proc = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path),
                           "-DKOLO_BUILD_PYTHON=OFF"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cache = (tmp_path / "CMakeCache.txt").read_text()
    assert "KOLO_BUILD_TESTS:BOOL=OFF" in cache
    assert not (tmp_path / "tests" / "cpp").exists()
    assert f"CMAKE_PROJECT_VERSION:STATIC={(ROOT / 'VERSION').read_text().strip()}" in cache
