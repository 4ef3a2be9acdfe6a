"""The configuration page cannot drift from the code: every environment variable the code reads and
every flag kolorun parses is in the tables docs/hooks/reference.py generates for it."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kolorun_path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs/hooks/reference.py")
reference = importlib.util.module_from_spec(_spec)
sys.modules["docs_reference"] = reference  # dataclasses look their module up there
_spec.loader.exec_module(reference)

# Where the code reads a setting by its name (without or with its prefix). Each pattern but the
# getenv guard (every read goes through base/env.h today) must find something
# (test_every_read_pattern_finds_reads), so a renamed reader cannot silently empty it.
CXX_READS = {
    "find_setting": r'find(?:_seconds)?_setting\([^;]*?"(?:KOLO_|HOROVOD_)?([A-Z][A-Z0-9_]+)"',
    "core/config.cc reader": r'reader\.\w+\("([A-Z][A-Z0-9_]+)"',
    "bootstrap/launch_info.cc get": r'\bget(?:_int)?\("([A-Z][A-Z0-9_]+)"',
    "lookup of a full name": r'lookup\w*\("(?:KOLO|HOROVOD)_([A-Z][A-Z0-9_]+)"',
    "getenv": r'getenv\("(?:KOLO|HOROVOD)_([A-Z][A-Z0-9_]+)"',
    "explicitly_set": r'explicitly_set\("([A-Z][A-Z0-9_]+)"',
}
# Python reads os.environ by literal names, directly, from a tuple of names to try or through a
# constant (staging.FORCE_ENV): every full KOLO_*/HOROVOD_* literal under python/ is taken as read.
PY_NAME = r'["\'](?:KOLO|HOROVOD)_([A-Z][A-Z0-9_]*[A-Z0-9])["\']'


def cxx_reads() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {key: set() for key in CXX_READS}
    for path in (ROOT / "src").rglob("*.cc"):
        text = path.read_text()
        for key, pattern in CXX_READS.items():
            if key.startswith("core/") and path.name != "config.cc":
                continue
            if key.startswith("bootstrap/") and path.name != "launch_info.cc":
                continue
            found[key].update(re.findall(pattern, text))
    return found


def python_reads() -> set[str]:
    names = set()
    for path in (ROOT / "python").rglob("*.py"):
        names.update(re.findall(PY_NAME, path.read_text()))
    return names


def documented(page: str) -> set[str]:
    return set(re.findall(r"`KOLO_([A-Z0-9_]+)`", page))


def missing_from(page: str, names: set[str]) -> set[str]:
    return names - documented(page)


def test_every_read_pattern_finds_reads():
    found = cxx_reads()
    for key, names in found.items():
        assert names or key == "getenv", f"nothing read with the '{key}' pattern: update CXX_READS"
    assert {"CYCLE_TIME", "RANK", "ELASTIC_FIRST_ROUND", "MPIRUN"} <= set().union(*found.values())
    assert {"RESET_LIMIT", "STAGE_THROUGH_HOST", "ELASTIC", "RANK"} <= python_reads()


def test_every_variable_the_code_reads_is_on_the_page():
    page = reference.settings_markdown(reference.read_settings())
    read = set().union(*cxx_reads().values()) | python_reads()
    assert not missing_from(page, read), (
        f"read by the code but not in src/base/settings.def (so not on the configuration page): "
        f"{sorted(missing_from(page, read))}")


def test_the_check_fails_for_a_variable_missing_from_the_page():
    settings = [s for s in reference.read_settings() if s.name != "PEER_TIMEOUT"]
    page = reference.settings_markdown(settings)
    assert missing_from(page, {"PEER_TIMEOUT", "CYCLE_TIME"}) == {"PEER_TIMEOUT"}


def test_every_row_of_settings_def_is_on_the_page_with_its_meaning():
    settings = reference.read_settings()
    page = reference.settings_markdown(settings)
    assert len(settings) >= 50
    for s in settings:
        assert f"| `KOLO_{s.name}` / `HOROVOD_{s.name}` | {s.default} |" in page
        assert s.meaning.replace("|", "\\|") in page


def test_a_malformed_row_is_an_error(tmp_path):
    bad = tmp_path / "settings.def"
    bad.write_text('KOLO_SETTING(CYCLE_TIME, core, "1 (ms)")\n')
    with pytest.raises(ValueError, match="CYCLE_TIME needs a default and a meaning"):
        reference.read_settings(bad)
    bad.write_text('KOLO_SETTING(CYCLE_TIME, nowhere, "1", "x")\n')
    with pytest.raises(ValueError, match="unknown group 'nowhere'"):
        reference.read_settings(bad)


def source_flags() -> set[str]:
    """Every long flag kolorun's command line defines: CLI11 options and flags in launcher/cli*.cc
    and the rows of the tuning-flag table (in whichever folder of src/launcher they live)."""
    flags = set()
    for path in (ROOT / "src/launcher").rglob("*.cc"):
        text = path.read_text()
        for spelling in re.findall(r'add_(?:option|flag)\(\s*"([^"]+)"', text):
            flags.update(name for name in spelling.split(",") if name.startswith("--"))
        flags.update(re.findall(r'TuningFlag\{\s*"(--[a-z0-9-]+)"', text))
    return flags


def test_every_kolorun_flag_is_on_the_page():
    done = subprocess.run([kolorun_path(), "--help"], capture_output=True, text=True, timeout=60,
                          check=True)
    page = reference.flags_markdown(reference.parse_help(done.stdout))
    flags = source_flags()
    assert {"--num-proc", "--fusion-threshold-mb", "--min-np", "--config-file"} <= flags
    listed = set(re.findall(r"--[a-z0-9-]+", "\n".join(
        line.split("|")[1] for line in page.splitlines() if line.startswith("| `"))))
    assert not flags - listed, f"kolorun flags missing from the page: {sorted(flags - listed)}"
    assert "| `-np,--num-proc` | `INT` | Total number of training processes (required). |" in page


def test_runtime_defaults_on_the_page_are_the_code_s():
    """core/config.cc reads numbers as reader.number("NAME", default, minimum) and switches as
    reader.flag("NAME").value_or(default): the page's default must be that value."""
    code = (ROOT / "src/core/config.cc").read_text()
    shown = {s.name: s.default for s in reference.read_settings()}
    numbers = re.findall(r'reader\.number\("([A-Z_]+)",\s*([0-9. *+]+),', code)
    switches = re.findall(r'reader\.flag\("([A-Z_]+)"\)\.value_or\((true|false)\)', code)
    assert len(numbers) >= 10 and len(switches) >= 5
    for name, expression in numbers:
        value = eval(expression, {"__builtins__": {}})  # digits, dots, * and + only (the regex)
        assert float(shown[name].split()[0]) == value, (name, shown[name], expression)
    for name, default in switches:
        assert shown[name].split()[0] == ("1" if default == "true" else "0"), (name, shown[name])
