"""``horovod.runner.util.threads`` on kolo: Horovod's background-thread helper, which Horovod's
own test utilities (``test/utils/common.py``) import, so its test suite runs unchanged."""

from __future__ import annotations

import threading
from typing import Any, Callable


def in_thread(target: Callable[..., Any], args: tuple = (), name: str | None = None,
              daemon: bool = True, silent: bool = False) -> threading.Thread:
    """Starts ``target(*args)`` in a new thread and returns the thread. ``silent`` drops any
    exception the target raises (Horovod's meaning); ``args`` must be a tuple, as in Horovod."""
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple, not {type(args)}, "
                         "for a single argument use (arg,)")
    run = target
    if silent:
        def run(*call_args: Any) -> None:
            try:
                target(*call_args)
            except Exception:  # noqa: BLE001 - silent means the caller asked to ignore it
                pass
    thread = threading.Thread(target=run, args=args, name=name, daemon=daemon)
    thread.start()
    return thread
