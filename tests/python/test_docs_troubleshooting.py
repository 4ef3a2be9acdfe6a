"""Each message quoted on the troubleshooting page (its ```text blocks; `<...>` marks what varies)
is kolo's: reproduced on this machine where that can be done (a 1 MiB /dev/shm, ranks with separate
/dev/shm mounts, an ssh port nobody listens on, an interface the host lacks, --check-build, a
module kolo does not have), else found in kolo's source (C++ string literals, adjacent ones joined,
and the Python package)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import kolorun_path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/guide/troubleshooting.md"
RANKS_ON_SEPARATE_SHM = (
    "kolorun -np 2 unshare -m sh -c "
    "'mount -t tmpfs tmpfs /dev/shm && exec python3 examples/allreduce_demo.py'")
SMALL_SHM = ("unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && "
             "kolorun -np 2 python3 examples/allreduce_demo.py'")
# section title -> (command, the indices of the section's text blocks it must print, needs root)
REPRODUCED = {
    "Ranks missing or \"Connection reset by peer\" in containers without `--ipc=host`":
        (RANKS_ON_SEPARATE_SHM, [0, 1], True),
    "A small `/dev/shm`": (SMALL_SHM, [0, 1], True),
    "NCCL or CUDA versions that do not match at install": ("kolorun --check-build", [0], False),
    "`No module named 'horovod'`": ("python3 -c 'import horovod.tensorflow'", [0], False),
    "Hosts that cannot ssh to each other": (
        "kolorun -np 2 -H localhost:1,127.0.0.2:1 --ssh-port 1 --start-timeout 10 python3 -c pass",
        [0], False),
    "The wrong network interface": (
        "KOLO_IFACE=nosuch0 kolorun -np 2 python3 examples/allreduce_demo.py", [0], False),
}
PLACEHOLDER = re.compile(r"<[^<>]+>|\[ \]|\[X\]")


def sections() -> dict[str, list[str]]:
    """Section title -> its ```text blocks, in page order."""
    found: dict[str, list[str]] = {}
    title = None
    for part in re.split(r"^(## .+)$", PAGE.read_text(), flags=re.M):
        if part.startswith("## "):
            title = part[3:].strip()
        elif title:
            found[title] = re.findall(r"^```text\n(.*?)^```", part, re.S | re.M)
    return found


def as_pattern(line: str) -> re.Pattern:
    pieces = PLACEHOLDER.split(line.strip())
    return re.compile(".+?".join(re.escape(piece) for piece in pieces))


def source_text() -> str:
    texts = []
    for path in (ROOT / "src").rglob("*.cc"):
        code = path.read_text()
        for run in re.finditer(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', code):
            literals = re.findall(r'"((?:[^"\\\n]|\\.)*)"', run.group(0))
            texts.append("".join(literals).replace('\\"', '"').replace("\\n", "\n"))
    for path in (ROOT / "python").rglob("*.py"):
        texts.append(path.read_text())
    return "\n".join(texts)


def in_source(line: str, source: str) -> list[str]:
    """The fragments of `line` between placeholders that the source lacks (short ones, such as a
    quote or a colon beside a placeholder, are not checked)."""
    fragments = [piece.strip(" '\":;,.()") for piece in PLACEHOLDER.split(line.strip())]
    checked = [piece for piece in fragments if len(piece) >= 12]
    assert checked, f"nothing to check in {line!r}"
    return [piece for piece in checked if piece not in source]


def test_every_section_quotes_a_message_and_reproductions_name_real_sections():
    found = sections()
    assert len(found) == 7, sorted(found)
    for title, blocks in found.items():
        assert blocks, f"section '{title}' quotes no message"
    assert set(REPRODUCED) <= set(found), set(REPRODUCED) - set(found)


def test_messages_not_reproduced_are_in_the_source():
    source = source_text()
    for title, blocks in sections().items():
        reproduced = REPRODUCED.get(title, (None, [], False))[1]
        for index, block in enumerate(blocks):
            if index in reproduced:
                continue
            for line in filter(str.strip, block.splitlines()):
                assert not in_source(line, source), (
                    f"'{title}': {in_source(line, source)} not found in kolo's source")


def test_the_source_check_fails_for_a_message_kolo_does_not_print():
    assert in_source("host '<host>' is not reachable over carrier pigeon", source_text())


@pytest.mark.parametrize("title", sorted(REPRODUCED))
def test_message_is_reproduced(title, tmp_path):
    command, indices, needs_root = REPRODUCED[title]
    if needs_root and (os.geteuid() != 0 or not shutil.which("unshare")):
        pytest.skip("needs root and unshare(1) to mount a /dev/shm of its own")
    if "ssh" in command and not shutil.which("ssh"):
        pytest.skip("needs the ssh client")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = dict(os.environ, PATH=f"{os.path.dirname(kolorun_path())}{os.pathsep}"
                                f"{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    output = done.stdout + done.stderr
    blocks = sections()[title]
    for index in indices:
        for line in filter(str.strip, blocks[index].splitlines()):
            assert as_pattern(line).search(output), (
                f"'{title}': the page quotes\n  {line}\nbut `{command}` printed:\n{output[-4000:]}")
