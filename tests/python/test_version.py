"""The version lives in one place, the file VERSION: the package metadata (pyproject.toml reads
it), kolo.__version__ (from the C++ build, which CMake configures from it), libkolo's
kolo_version() and kolorun --version all say the same."""

import ctypes
import importlib.metadata
import subprocess
from pathlib import Path

import kolo
from conftest import kolorun_path

VERSION = (Path(__file__).resolve().parents[2] / "VERSION").read_text().strip()


def test_version_file_holds_one_version():
    assert VERSION and VERSION[0].isdigit() and " " not in VERSION, VERSION


def test_python_package_and_metadata_agree_with_version_file():
    assert kolo.__version__ == VERSION
    assert importlib.metadata.version("kolo") == VERSION
    import horovod
    assert horovod.__version__ == VERSION


def test_cxx_build_agrees_with_version_file():
    assert kolo._core.VERSION == VERSION
    library = ctypes.CDLL(str(Path(kolo.__file__).parent / "libkolo.so"))
    library.kolo_version.restype = ctypes.c_char_p
    assert library.kolo_version().decode() == VERSION
    proc = subprocess.run([kolorun_path(), "--version"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"kolorun {VERSION}", proc.stdout
