"""Host-change notices pushed to the states of an elastic worker, as Horovod's worker
notification service pushes them: a daemon thread asks kolorun's rendezvous store for its
host-change stamp every `interval` seconds and hands each new stamp to every registered
``State`` (``on_hosts_updated``). So a worker hears of a change within one interval even while
it is not committing, e.g. rank 0 of Horovod's integration script, which waits on
``state._host_messages`` between epochs.

Only stamps that appear after the thread's first look count: a change that happened before this
worker started is already part of the membership it joined.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref

from kolo.elastic import launcher_link

# Seconds between two looks at the store (one small TCP request each); KOLO_ELASTIC_NOTICE_INTERVAL
# overrides it. Well under kolorun's discovery interval, so the notice adds little to it.
DEFAULT_INTERVAL = 0.1

_lock = threading.Lock()
_listeners: "weakref.WeakSet" = weakref.WeakSet()
_thread: threading.Thread | None = None
_stop = threading.Event()


def interval() -> float:
    text = os.environ.get("KOLO_ELASTIC_NOTICE_INTERVAL")
    if not text:
        return DEFAULT_INTERVAL
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"kolo elastic: KOLO_ELASTIC_NOTICE_INTERVAL={text!r} is not a number "
                         "of seconds") from None
    if not value > 0:
        raise ValueError(f"kolo elastic: KOLO_ELASTIC_NOTICE_INTERVAL={value} must be positive")
    return value


def register(state, read=launcher_link.hosts_updated) -> None:
    """Sends `state` every host change seen from now on (outside elastic mode: nothing, no
    thread). `read` returns the launcher's (stamp, what changed); tests give their own."""
    global _thread
    if read is launcher_link.hosts_updated and not launcher_link.elastic_mode():
        return
    with _lock:
        _listeners.add(state)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_watch, args=(read, interval()),
                                       name="kolo-elastic-host-notices", daemon=True)
            _thread.start()


def _stop_watching() -> None:
    # Before the interpreter (and then the C++ runtime) goes away: a read still in the core when
    # the runtime's statics are destroyed would abort the process at exit.
    _stop.set()
    if _thread is not None:
        _thread.join(timeout=5)


atexit.register(_stop_watching)


def _watch(read, every: float) -> None:
    seen = None
    while seen is None or not _stop.wait(every):
        try:
            stamp, result = read()
        except Exception:  # noqa: BLE001 - store gone (kolorun ended): no more notices
            return
        if seen is None:
            seen = stamp
            continue
        if stamp <= seen:
            continue
        seen = stamp
        with _lock:
            listeners = list(_listeners)
        for state in listeners:
            state.on_hosts_updated(stamp, result)
