"""A horovodrun command line run from Python (``horovod.runner.launch``'s ``parse_args`` and
``_run_elastic``, which Horovod's own integration tests call in-process): the words go to
kolorun unchanged, and a failed job becomes the ``RuntimeError`` Horovod raises.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import threading

from kolo.runner import NON_ZERO_EXIT_MESSAGE, _kolorun

# Horovod's text, which callers match (horovod.runner.elastic.constants).
RESET_LIMIT_EXCEEDED_MESSAGE = ("Horovod was shutdown because number of resets during elastic "
                                "job exceeded limit: {}")
# Any of them makes a command line elastic (kolorun refuses --elastic-timeout otherwise).
_ELASTIC_FLAGS = ("--min-np", "--min-num-proc", "--max-np", "--max-num-proc",
                  "--host-discovery-script")
# What kolorun (its driver) and the workers (kolo.elastic.run_loop) print when the reset limit
# ends the job.
_RESET_LIMIT_SIGNS = ("exceed --reset-limit", "more than the reset limit")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``sys.argv[1:]`` by default) as a namespace: ``argv`` holds every word
    for kolorun; ``reset_limit`` and ``elastic_timeout`` are read out of it (None when absent),
    since the error and the default timeout depend on them."""
    words = list(sys.argv[1:] if argv is None else argv)
    values = {"--reset-limit": None, "--elastic-timeout": None}
    for i, word in enumerate(words[:-1]):
        # The first one: kolorun's flags come before the training command's own.
        if word in values and values[word] is None:
            values[word] = words[i + 1]
    elastic = any(word in _ELASTIC_FLAGS for word in words)
    return argparse.Namespace(
        argv=words, elastic=elastic,
        reset_limit=None if values["--reset-limit"] is None else int(values["--reset-limit"]),
        elastic_timeout=(None if values["--elastic-timeout"] is None
                         else float(values["--elastic-timeout"])))


def run(args: argparse.Namespace, elastic_timeout: float | None = None,
        extra_env: dict | None = None) -> None:
    """Runs kolorun with ``args.argv``; `elastic_timeout` is passed as --elastic-timeout when the
    command line is elastic and has none. Raises RuntimeError with Horovod's message if the job
    fails."""
    # KOLORUN_PATH: a kolorun of one's own (a development stage) over the installed one.
    command = [os.environ.get("KOLORUN_PATH") or _kolorun()]
    if elastic_timeout is not None and args.elastic_timeout is None and args.elastic:
        command += ["--elastic-timeout", repr(float(elastic_timeout))]
    command += args.argv
    env = {**os.environ, **extra_env} if extra_env else None
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace",
                               env=env)
    last_lines: collections.deque = collections.deque(maxlen=200)
    reader = threading.Thread(target=_echo, args=(process.stderr, last_lines), daemon=True)
    reader.start()
    code = process.wait()
    reader.join()
    if code == 0:
        return
    said = "".join(last_lines)
    if args.reset_limit is not None and any(sign in said for sign in _RESET_LIMIT_SIGNS):
        raise RuntimeError(RESET_LIMIT_EXCEEDED_MESSAGE.format(args.reset_limit))
    reasons = [line.strip() for line in last_lines if line.startswith("[kolorun]")]
    raise RuntimeError(f"{NON_ZERO_EXIT_MESSAGE} kolorun exited with status {code}"
                       + (f"; its last word: {reasons[-1]}" if reasons else ""))


def _echo(stream, last_lines) -> None:
    for line in stream:
        sys.stderr.write(line)
        last_lines.append(line)
    sys.stderr.flush()
