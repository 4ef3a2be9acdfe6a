"""kolo.elastic.host_notices: a state hears of each host change the launcher announces after it
registered, without committing (Horovod's worker notification service)."""

import queue
import threading

from kolo.elastic import host_notices
from kolo.elastic.launcher_link import HostUpdateResult


class Listener:
    def __init__(self):
        self.notices = queue.Queue()

    def on_hosts_updated(self, stamp, result):
        self.notices.put((stamp, result))


def test_each_new_stamp_reaches_the_state_and_old_ones_do_not(monkeypatch):
    monkeypatch.setenv("KOLO_ELASTIC_NOTICE_INTERVAL", "0.01")
    monkeypatch.setattr(host_notices, "_thread", None)
    announced = [(3, HostUpdateResult.added)]  # a change from before this worker started
    lock = threading.Lock()

    def read():
        with lock:
            return announced[-1]

    listener = Listener()
    host_notices.register(listener, read=read)
    with lock:
        announced.append((4, HostUpdateResult.removed))
    assert listener.notices.get(timeout=30) == (4, HostUpdateResult.removed)
    with lock:
        announced.append((5, HostUpdateResult.mixed))
    assert listener.notices.get(timeout=30) == (5, HostUpdateResult.mixed)
    assert listener.notices.empty()


def test_outside_elastic_mode_no_thread_starts(monkeypatch):
    monkeypatch.delenv("KOLO_ELASTIC", raising=False)
    monkeypatch.setattr(host_notices, "_thread", None)
    host_notices.register(Listener())
    assert host_notices._thread is None


def test_a_bad_interval_is_named(monkeypatch):
    monkeypatch.setenv("KOLO_ELASTIC_NOTICE_INTERVAL", "soon")
    try:
        host_notices.interval()
    except ValueError as error:
        assert "KOLO_ELASTIC_NOTICE_INTERVAL='soon'" in str(error)
    else:
        raise AssertionError("a non-number interval was accepted")
