"""The documentation site's strict build really is strict: a copy of docs/ with one broken link or
one page missing from the nav fails `mkdocs build --strict` (as scripts/test.sh runs it), and the
copy as it is builds, with the generated configuration tables in it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kolorun_path

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                reason="MkDocs is not installed (scripts/setup.sh installs it)")


def build(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path,
                          env=dict(os.environ, KOLORUN_PATH=kolorun_path()), capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    # The hook finds settings.def relative to its own file: give it the real one.
    (tmp_path / "src/base").mkdir(parents=True)
    shutil.copy(ROOT / "src/base/settings.def", tmp_path / "src/base")
    return tmp_path


def test_the_site_builds_with_the_generated_tables(site):
    done = build(site)
    assert done.returncode == 0, done.stderr
    page = (site / "build/site/guide/configuration/index.html").read_text()
    assert "KOLO_PEER_TIMEOUT" in page and "--fusion-threshold-mb" in page
    assert "<!-- kolo:" not in page


def test_a_broken_link_fails_the_build(site):
    page = site / "docs/guide/launching.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    done = build(site)
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


def test_a_page_missing_from_the_nav_fails_the_build(site):
    (site / "docs/guide/orphan.md").write_text("# An orphan\n")
    done = build(site)
    assert done.returncode != 0
    assert "guide/orphan.md" in done.stderr
