"""The elastic training loop (``horovod.common.elastic.run_fn``): runs the user's function and,
when a worker is lost or the hosts change, resets the job and runs it again from the last commit.

    sync state from rank 0 -> func(state)       returns: done
      HorovodInternalError  -> restore the last commit, reset, sync, run again
      HostsUpdatedInterrupt -> keep the state (it was just committed), reset, sync unless only
                               hosts were removed, run again
      WorkerRemovedError    -> this worker's host left the job: exit with status 0

A reset is ``shutdown(); init()``: init joins the next membership round published by kolorun.
A reset that fails itself (a peer died during it) is simply tried again.
"""

from __future__ import annotations

import functools
import signal
import sys
from typing import Any, Callable

from kolo import _core
from kolo.elastic import launcher_link
from kolo.exceptions import HorovodInternalError, HostsUpdatedInterrupt, WorkerRemovedError


# A worker whose host left the job must not hold its slot: if its exit hangs (seen under load: a
# removed worker still alive 40 s after "exiting normally", until kolorun killed it, and its slot
# with it), SIGALRM's default action ends it after this long. kolorun does not count the end of a
# worker it left out of the round as a failure, whatever its status.
REMOVED_EXIT_DEADLINE_S = 5


def _leave(removed: WorkerRemovedError) -> None:
    _say(f"this worker's host left the job, exiting normally ({removed})")
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    except ValueError:  # not the main thread: keep whatever handler is there
        pass
    signal.alarm(REMOVED_EXIT_DEADLINE_S)
    sys.exit(0)


class ResetLimitExceeded(RuntimeError):
    """More resets than --reset-limit allows: the job gives up instead of retrying forever."""


def _say(text: str) -> None:
    print(f"[kolo] elastic: {text}", file=sys.stderr, flush=True)


def _where() -> str:
    if not _core.is_initialized():
        return "not initialized"
    return f"rank {_core.rank()} of {_core.size()}"


def run_fn(func: Callable[..., Any], reset: Callable[[], None]) -> Callable[..., Any]:
    """Wraps ``func(state, *args, **kwargs)`` in the elastic loop; `reset` re-forms the job
    (``shutdown(); init()``). The wrapped function needs no collective before it is called."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        limit = launcher_link.reset_limit()
        resets = 0
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError as error:
                cause = f"a collective failed ({error})"
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as interrupt:
                cause = "hosts changed"
                skip_sync = interrupt.skip_sync
            while True:
                resets += 1
                if limit is not None and resets > limit:
                    raise ResetLimitExceeded(
                        f"kolo elastic: {resets} resets of this worker, more than the reset "
                        f"limit {limit} (--reset-limit); last cause: {cause}")
                _say(f"resetting ({_where()}): {cause}")
                try:
                    reset()
                    break
                except WorkerRemovedError as removed:
                    _leave(removed)
                except HorovodInternalError as error:
                    # The round this worker was joining broke up (a peer died meanwhile): the
                    # state is unchanged since the restore, so just join the next round. The
                    # new round may hold new workers, so sync even if only hosts were removed.
                    cause = f"the reset itself failed ({error})"
                    skip_sync = False
            _say(f"reset done: now {_where()}")
            state.on_reset()

    return wrapper
