"""Reading a kolorun job's combined output: kolorun prefixes every line a rank writes with
``[RANK]<stdout>:`` or ``[RANK]<stderr>:``. Shared by tests/python and tests/faults (each
conftest.py puts this folder on sys.path)."""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^\[(\d+)\]<(stdout|stderr)>:(.*)$")


def rank_lines(output: str, rank: int, stream: str = "stdout") -> list[str]:
    """The lines `rank` wrote to `stream` ("stdout" or "stderr"), prefix removed, in order."""
    found = []
    for line in output.splitlines():
        match = _PREFIX.match(line)
        if match and int(match.group(1)) == rank and match.group(2) == stream:
            found.append(match.group(3))
    return found
