"""The rank side of ``horovod.run`` (kolo.runner): ``python -m kolo._run_task`` under kolorun.

Loads the pickled (function, args, kwargs), calls it, and prints one line
``<marker><rank> ok|error <base64 pickle>`` on stdout: the return value, or for an exception
(type name, message, formatted traceback, the exception itself when it pickles). Exits 1 after
an exception, so kolorun stops the job and reports the rank as failed.
"""

import os
import sys
import traceback

from kolo.runner import (MARKER_VARIABLE, PAYLOAD_FILE_VARIABLE, PAYLOAD_VARIABLE, decode,
                         encode)


def _rank() -> int:
    # kolorun's variables first; mpirun's when the job was started with --mpi.
    for name in ("KOLO_RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    raise RuntimeError("kolo._run_task runs under kolorun (started by horovod.run), which sets "
                       "KOLO_RANK; it was not found")


def _final_rank(start_rank: int) -> int:
    # In an elastic job the ranks change at each reset: report under the rank held at the end.
    try:
        from kolo import _core
        if _core.is_initialized():
            return _core.rank()
    except ImportError:
        pass
    return start_rank


def _load_payload():
    path = os.environ.get(PAYLOAD_FILE_VARIABLE)
    if path:
        with open(path, encoding="ascii") as f:
            return decode(f.read())
    return decode(os.environ[PAYLOAD_VARIABLE])


def _picklable(exception):
    try:
        encode(exception)
        return exception
    except Exception:  # noqa: BLE001 - any pickling failure: send the text only
        return None


def main() -> int:
    marker = os.environ[MARKER_VARIABLE]
    rank = _rank()
    try:
        func, args, kwargs = _load_payload()
        result = ("ok", encode(func(*args, **kwargs)))
        rank = _final_rank(rank)
    except BaseException as error:  # noqa: BLE001 - every failure is reported to the launcher
        if (isinstance(error, SystemExit) and error.code in (0, None)
                and os.environ.get("KOLO_ELASTIC") == "1"):
            # An elastic worker whose host was removed leaves with status 0 (hvd.elastic.run):
            # it is not in the last round and has no result to report.
            return 0
        rank = _final_rank(rank)
        details = (type(error).__name__, str(error), traceback.format_exc(), _picklable(error))
        result = ("error", encode(details))
    sys.stdout.flush()
    print(f"{marker}{rank} {result[0]} {result[1]}", flush=True)
    return 0 if result[0] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
