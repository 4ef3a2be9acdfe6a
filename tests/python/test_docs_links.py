"""README.md and CONTRIBUTING.md live outside the MkDocs site, so its strict build does not check
their links: every relative link of theirs must name a file of the repository, and an anchor into
a guide page must be one of that page's headings."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def slug(heading: str) -> str:
    """MkDocs' (Python-Markdown toc) anchor of a heading: lower case, punctuation dropped, spaces
    as hyphens."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", page.read_text(), re.M)}


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", document.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http:, mailto:
        path, _, anchor = target.partition("#")
        file = (document.parent / path).resolve()
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    return broken


def test_readme_and_contributing_links_resolve():
    for name in ("README.md", "CONTRIBUTING.md"):
        assert not broken_links(ROOT / name), f"{name}: {broken_links(ROOT / name)}"


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "page.md").write_text("# A page\n\n## Two words\n")
    doc = tmp_path / "doc.md"
    doc.write_text("[a](page.md#two-words) [b](page.md#three) [c](gone.md) [d](https://x.org)")
    assert broken_links(doc) == ["page.md#three", "gone.md"]
