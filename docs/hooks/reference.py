"""The configuration page's tables, generated from the code's own listings at build time (a MkDocs
hook, `hooks:` in mkdocs.yml), so the guide cannot drift from what kolo reads:

- every environment setting: the rows of src/base/settings.def, the file base/env.cc compiles its
  table of known settings from;
- every kolorun flag: `kolorun --help`, CLI11's listing of the flags kolorun actually parses
  (kolorun is found as $KOLORUN_PATH, else on PATH; the build fails without one).

A page asks for a table with a marker line, `<!-- kolo: settings -->` or
`<!-- kolo: kolorun-flags -->`. tests/python/test_docs_reference.py uses the same functions."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_DEF = ROOT / "src" / "base" / "settings.def"
GROUP_TITLES = {
    "core": "The runtime",
    "observability": "Timeline, stall inspector and autotune",
    "launch": "Set by kolorun for each rank",
    "elastic": "Elastic training",
    "launcher": "kolorun and the MPI plugin",
    "python": "kolo.torch",
    "tests": "kolo's own test scripts",
}


@dataclass
class Setting:
    name: str
    group: str
    default: str
    meaning: str


@dataclass
class Flag:
    names: str  # "-np,--num-proc"
    value: str  # "INT", "" for a switch
    group: str  # CLI11's group title ("Options", "Elastic", ...)
    help: str


def _c_strings(text: str) -> list[str]:
    """The string arguments of one row, each the concatenation of adjacent C literals."""
    out: list[str] = []
    current = None
    for piece in re.finditer(r'"((?:[^"\\]|\\.)*)"|,', text):
        if piece.group(0) == ",":
            if current is not None:
                out.append(current)
            current = None
        else:
            current = (current or "") + piece.group(1).replace('\\"', '"')
    if current is not None:
        out.append(current)
    return out


def read_settings(path: Path = SETTINGS_DEF) -> list[Setting]:
    """Every KOLO_SETTING row of settings.def, in file order."""
    text = re.sub(r"//[^\n]*", "", path.read_text())
    settings = []
    for row in re.finditer(r"KOLO_SETTING\(\s*(\w+)\s*,\s*(\w+)\s*,(.*?)\)\s*(?=KOLO_SETTING|$)",
                           text, re.S):
        strings = _c_strings(row.group(3))
        if len(strings) != 2:
            raise ValueError(f"{path}: row {row.group(1)} needs a default and a meaning, "
                             f"found {len(strings)} strings")
        name, group = row.group(1), row.group(2)
        if group not in GROUP_TITLES:
            raise ValueError(f"{path}: row {name} has unknown group '{group}' "
                             f"(known: {', '.join(GROUP_TITLES)})")
        settings.append(Setting(name, group, strings[0], strings[1]))
    if not settings:
        raise ValueError(f"{path}: no KOLO_SETTING rows")
    return settings


def kolorun_path() -> str:
    found = os.environ.get("KOLORUN_PATH") or shutil.which("kolorun")
    if not found:
        raise RuntimeError("the configuration page lists kolorun's flags from `kolorun --help`: "
                           "install kolo (scripts/setup.sh) or set KOLORUN_PATH")
    return found


def parse_help(text: str) -> list[Flag]:
    """CLI11's help: group headers ("Options:", "elastic arguments:") at column 0, then one entry
    per flag, `  NAMES [VALUE]  help`, the help on the same line after two spaces or on the
    deeper-indented lines below."""
    flags: list[Flag] = []
    group = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            group = line[:-1].strip() if line.rstrip().endswith(":") else None
            if group:
                group = group[0].upper() + group[1:]
            continue
        if group is None:
            continue
        if line.startswith("  -"):
            signature, _, description = line.strip().partition("  ")
            names, _, value = signature.partition(" ")
            value, _, excludes = value.partition("Excludes:")
            if excludes:
                description = f"{description.strip()} Excludes {excludes.strip()}."
            flags.append(Flag(names, value.strip(), group, description.strip()))
        elif flags and line.startswith(" " * 8):
            flags[-1].help = (flags[-1].help + " " + line.strip()).strip()
    if not flags:
        raise ValueError("kolorun --help listed no flags")
    return flags


def read_flags() -> list[Flag]:
    done = subprocess.run([kolorun_path(), "--help"], capture_output=True, text=True, timeout=60,
                          check=True)
    return parse_help(done.stdout)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_markdown(settings: list[Setting]) -> str:
    parts = []
    for group, title in GROUP_TITLES.items():
        rows = [s for s in settings if s.group == group]
        if not rows:
            continue
        parts.append(f"### {title}\n\n| variable | default | meaning |\n| --- | --- | --- |")
        for s in rows:
            parts.append(f"| `KOLO_{s.name}` / `HOROVOD_{s.name}` | {_cell(s.default)} | "
                         f"{_cell(s.meaning)} |")
        parts.append("")
    return "\n".join(parts)


def flags_markdown(flags: list[Flag]) -> str:
    parts, group = [], None
    for flag in flags:
        if flag.group != group:
            group = flag.group
            parts.append(f"\n### {group}\n\n| flag | value | meaning |\n| --- | --- | --- |")
        value = f"`{flag.value}`" if flag.value else ""
        text = _cell(flag.help).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        parts.append(f"| `{flag.names}` | {value} | {text} |")
    return "\n".join(parts).strip() + "\n"


# MkDocs hook: replaces the marker lines in any page.
def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001
    if "<!-- kolo: settings -->" in markdown:
        markdown = markdown.replace("<!-- kolo: settings -->", settings_markdown(read_settings()))
    if "<!-- kolo: kolorun-flags -->" in markdown:
        markdown = markdown.replace("<!-- kolo: kolorun-flags -->", flags_markdown(read_flags()))
    return markdown
