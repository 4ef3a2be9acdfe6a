"""Every shell command the user guide's getting-started and launching pages show is run as written,
block by block, and must succeed. A block that cannot run on one machine (a second host, a Slurm
allocation) carries `<!-- docs-test: skip (reason) -->` on the line before its fence; a marker
without a reason is an error. Blocks run with bash -e in a fresh folder holding the repository's
examples/ (the pages' commands name it relatively), with the kolorun under test first on PATH."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import kolorun_path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["docs/guide/getting-started.md", "docs/guide/launching.md"]
SKIP = re.compile(r"^<!-- docs-test: skip \((.+)\) -->$")
TIMEOUT_S = 420  # one MNIST epoch on 2 ranks takes 4 to 20 s of training on idle cores


def shell_blocks(page: str) -> list[tuple[str, int, str, str | None]]:
    """(page, line, code, skip reason or None) for each ```bash or ```sh block of the page."""
    blocks = []
    lines = (ROOT / page).read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence.group(1) in ("bash", "sh"):
            before = lines[i - 1].strip() if i > 0 else ""
            if before.startswith("<!-- docs-test"):
                marker = SKIP.match(before)
                if not marker or not marker.group(1).strip():
                    raise ValueError(f"{page}:{i}: a docs-test marker needs the form "
                                     "'<!-- docs-test: skip (reason) -->'")
                reason = marker.group(1)
            else:
                reason = None
            blocks.append((page, i + 1, "\n".join(lines[i + 1:end]), reason))
        i = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in shell_blocks(page)]


def test_each_page_runs_something_and_skips_say_why():
    for page in PAGES:
        ran = [b for b in BLOCKS if b[0] == page and b[3] is None]
        assert ran, f"{page} has no shell block the test runs"
    assert all(len(b[3]) > 10 for b in BLOCKS if b[3] is not None)


def test_a_marker_without_reason_is_refused(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: skip () -->\n```bash\ntrue\n```\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    with pytest.raises(ValueError, match="needs the form"):
        shell_blocks("page.md")


@pytest.mark.parametrize("page,line,code,reason", BLOCKS,
                         ids=[f"{Path(b[0]).stem}:{b[1]}" for b in BLOCKS])
def test_command_runs(page, line, code, reason, tmp_path):
    if reason is not None:
        pytest.skip(f"{page}:{line}: {reason}")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    kolorun_dir = os.path.dirname(kolorun_path())
    env = dict(os.environ, PATH=f"{kolorun_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    try:
        done = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{page}:{line} did not finish within {TIMEOUT_S} s:\n{code}\n"
                    f"{expired.stdout}{expired.stderr}")
    assert done.returncode == 0, (
        f"{page}:{line} failed with exit code {done.returncode}:\n{code}\n"
        f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
