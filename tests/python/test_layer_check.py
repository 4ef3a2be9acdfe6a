"""scripts/check_layers.py: the real tree passes; includes planted against the layer matrix of
docs/ARCHITECTURE.md fail, naming the file, the line and the rule broken."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "check_layers.py"


def run_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of src/ and docs/ARCHITECTURE.md to plant bad includes in."""
    shutil.copytree(REPO / "src", tmp_path / "src")
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "ARCHITECTURE.md", tmp_path / "docs" / "ARCHITECTURE.md")
    return tmp_path


def plant(tree: Path, file: str, include: str) -> int:
    """Adds `#include "<include>"` after the first include of src/<file>; returns its line."""
    path = tree / "src" / file
    lines = path.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("#include"))
    lines.insert(first + 1, f'#include "{include}"\n')
    path.write_text("".join(lines))
    return first + 2


def test_the_real_tree_follows_the_matrix():
    result = run_check(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every include under src/ follows" in result.stdout


def test_the_unchanged_copy_passes(tree: Path):
    result = run_check(tree)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("file", "include", "owner", "target_layer"),
    [
        # up: the kernels below comm reaching into comm
        ("kernels/reduce.cc", "comm/communicator.h", "kernels", "comm"),
        # up: base reaching into core
        ("base/logger.cc", "core/config.h", "base", "core"),
        # sideways: negotiation and backends stand side by side
        ("negotiation/controller.cc", "backends/backend.h", "negotiation", "backends"),
        # past the seam: comm naming a concrete transport
        ("comm/exchange.cc", "transport/tcp/socket.h", "comm", "transport/tcp"),
        ("core/session.cc", "transport/shm/arena.h", "core", "transport/shm"),
    ],
)
def test_a_planted_include_fails_naming_file_line_and_rule(tree, file, include, owner,
                                                           target_layer):
    line = plant(tree, file, include)
    result = run_check(tree)
    assert result.returncode == 1, result.stdout
    problems = result.stdout.strip().splitlines()
    assert len(problems) == 1, result.stdout
    assert problems[0].startswith(f"src/{file}:{line}: "), problems[0]
    assert f'layer {owner} includes "{include}" of layer {target_layer}, which it may not' in \
        problems[0]
    assert "against docs/ARCHITECTURE.md's layer matrix" in result.stderr


def test_a_header_entry_allows_that_header_only(tree: Path):
    # comm may include transport/link.h but nothing else directly in transport/ that the matrix
    # does not name.
    (tree / "src" / "transport" / "secret_sauce.h").write_text("#pragma once\n")
    line = plant(tree, "comm/barrier.cc", "transport/secret_sauce.h")
    result = run_check(tree)
    assert result.returncode == 1
    assert f"src/comm/barrier.cc:{line}: layer comm includes \"transport/secret_sauce.h\"" in \
        result.stdout


def test_a_folder_missing_from_the_matrix_fails(tree: Path):
    # A folder name no layer will ever have (src/gpu was the example until it became a layer).
    (tree / "src" / "unlisted_room").mkdir()
    (tree / "src" / "unlisted_room" / "kernels.cc").write_text('#include "base/errors.h"\n')
    result = run_check(tree)
    assert result.returncode == 1
    assert "src/unlisted_room/kernels.cc: folder unlisted_room is not a layer of the matrix" \
        in result.stdout


def test_an_include_that_is_no_path_under_src_fails(tree: Path):
    line = plant(tree, "fusion/fusion_buffer.cc", "fusion_planner.h")
    result = run_check(tree)
    assert result.returncode == 1
    assert f'src/fusion/fusion_buffer.cc:{line}: #include "fusion_planner.h" is not a path under ' \
        "src/" in result.stdout


def test_the_matrix_is_read_from_the_document(tree: Path):
    # Allowing negotiation -> backends in the table makes the same include pass.
    plant(tree, "negotiation/controller.cc", "backends/backend.h")
    doc = tree / "docs" / "ARCHITECTURE.md"
    text = doc.read_text()
    row = "| `negotiation` | `base`, `kernels`, `comm` |"
    assert row in text
    doc.write_text(text.replace(row, "| `negotiation` | `base`, `kernels`, `comm`, `backends` |"))
    result = run_check(tree)
    assert result.returncode == 0, result.stdout
