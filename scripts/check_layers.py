#!/usr/bin/env python3
"""Fails when a `#include "..."` under src/ points up or sideways against the layer matrix.

The matrix is the Markdown table under the "Layer matrix" heading of docs/ARCHITECTURE.md: one row
per layer (a folder under src/, named by its path from src/), and the layers and single headers it
may include besides its own files. A file belongs to the longest layer folder that holds it, so
src/transport/tcp/mesh.cc is in `transport/tcp`, not `transport`; an entry that names a header
(`transport/link.h`) allows that one header and nothing else of its folder.

Usage: check_layers.py [--root DIR]   (DIR: the checkout; default: this script's parent's parent)
Exit status 0 when every include is allowed, 1 with one line per broken rule (file:line: what).
Only the Python standard library is used, so the check runs before anything is built.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MATRIX_HEADING = re.compile(r"^#+\s+.*layer matrix", re.IGNORECASE)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = {".h", ".hpp", ".cc", ".cpp", ".c"}
ROOT_LAYER = "(root)"  # files directly in src/ (libkolo.cc)


def parse_matrix(architecture: Path) -> dict[str, set[str]]:
    """Layer -> what it may include, from the first table after the matrix heading."""
    lines = architecture.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if MATRIX_HEADING.match(line)), None)
    if start is None:
        raise SystemExit(f"{architecture}: no 'Layer matrix' heading")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.strip().startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break  # the table ended
    if len(rows) < 3:
        raise SystemExit(f"{architecture}: the layer matrix table has no rows")
    matrix: dict[str, set[str]] = {}
    for cells in rows[2:]:  # skip the header row and the |---| row
        if len(cells) < 2:
            raise SystemExit(f"{architecture}: malformed layer matrix row {cells}")
        layer = cells[0].strip("` ")
        allowed = {name.strip("` ") for name in cells[1].split(",")}
        matrix[layer] = {name for name in allowed if name and name not in {"-", "—", "nothing"}}
    return matrix


def layer_of(path: str, layers: set[str]) -> str | None:
    """The longest layer folder holding `path` (relative to src/); None when none does."""
    best = None
    for layer in layers:
        if layer != ROOT_LAYER and (path == layer or path.startswith(layer + "/")):
            if best is None or len(layer) > len(best):
                best = layer
    if best is None and "/" not in path:
        return ROOT_LAYER
    return best


def check(root: Path) -> list[str]:
    src = root / "src"
    matrix = parse_matrix(root / "docs" / "ARCHITECTURE.md")
    layers = set(matrix)
    problems = []
    for path in sorted(p for p in src.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        relative = path.relative_to(src).as_posix()
        owner = layer_of(relative, layers)
        if owner is None:
            problems.append(f"src/{relative}: folder {Path(relative).parent} is not a layer of the "
                            "matrix in docs/ARCHITECTURE.md (add a row for it)")
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = match.group(1)
            where = f"src/{relative}:{number}"
            if not (src / target).is_file():
                problems.append(f'{where}: #include "{target}" is not a path under src/ '
                                "(includes name files by their path from src/)")
                continue
            target_layer = layer_of(target, layers)
            if target_layer == owner or target in matrix[owner]:
                continue
            if target_layer is None:
                problems.append(f'{where}: #include "{target}" is in no layer of the matrix')
            elif target_layer not in matrix[owner]:
                allowed = ", ".join(sorted(matrix[owner])) or "nothing"
                problems.append(f'{where}: layer {owner} includes "{target}" of layer '
                                f"{target_layer}, which it may not (it may include: {allowed})")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    problems = check(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against docs/ARCHITECTURE.md's "
              "layer matrix", file=sys.stderr)
        return 1
    print("check_layers: every include under src/ follows docs/ARCHITECTURE.md's layer matrix")
    return 0


if __name__ == "__main__":
    sys.exit(main())
