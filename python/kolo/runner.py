"""``horovod.run`` / ``horovod.runner.run`` on kolo: run a Python function on every rank of a job
started by kolorun and get back the list of its return values, in rank order.

The function and its arguments are pickled (cloudpickle when installed, as Horovod does, so
lambdas and locally defined functions work; plain pickle otherwise) and handed to each rank,
which runs ``python -m kolo._run_task``: it calls the function and prints the pickled result (or
the exception) as one marked line on its stdout. kolorun carries that line back, from remote
hosts too, so no shared file system is needed. Every other output line is printed as usual.
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from pathlib import Path

try:
    import cloudpickle as _pickle
except ImportError:  # pragma: no cover - depends on the environment
    import pickle as _pickle

# Environment variables the rank side reads (names without a KOLO_ prefix: the core warns about
# KOLO_* names it does not know).
PAYLOAD_FILE_VARIABLE = "KOLORUN_FUNCTION_FILE"
PAYLOAD_VARIABLE = "KOLORUN_FUNCTION"
MARKER_VARIABLE = "KOLORUN_RESULT_MARKER"
# Horovod's text for a job whose processes failed (horovod.runner.gloo_run), which callers match.
NON_ZERO_EXIT_MESSAGE = ("Horovod detected that one or more processes exited with non-zero "
                         "status, thus causing the job to be terminated.")
# Linux refuses a single environment string over 128 KiB (MAX_ARG_STRLEN).
_MAX_ENVIRONMENT_PAYLOAD = 100 * 1024


def encode(obj) -> str:
    return base64.b64encode(_pickle.dumps(obj)).decode("ascii")


def decode(text: str):
    return _pickle.loads(base64.b64decode(text))


def _kolorun() -> str:
    # The kolorun installed with this kolo (beside this Python's scripts), else the one on PATH.
    beside = Path(sysconfig.get_path("scripts")) / "kolorun"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kolorun")
    if found is None:
        raise RuntimeError("horovod.run needs kolorun, which is neither beside this Python "
                           f"({beside.parent}) nor on PATH: reinstall kolo (pip install .)")
    return found


def _elastic_arguments(min_num_proc, max_num_proc, reset_limit, cooldown_range,
                       host_discovery_script) -> list[str]:
    """kolorun's elastic flags for horovod.run's elastic parameters (none given: [])."""
    args = []
    if min_num_proc is not None:
        args += ["--min-np", str(int(min_num_proc))]
    if max_num_proc is not None:
        args += ["--max-np", str(int(max_num_proc))]
    if host_discovery_script is not None:
        args += ["--host-discovery-script", str(host_discovery_script)]
    if reset_limit is not None:
        args += ["--reset-limit", str(int(reset_limit))]
    if cooldown_range is not None:
        low, high = cooldown_range
        args += ["--blacklist-cooldown-range", str(int(low)), str(int(high))]
    return args


def _launcher_arguments(num_proc, slots, hosts, hostfile, start_timeout, ssh_port,
                        ssh_identity_file, disable_cache, output_filename, verbose, use_gloo,
                        use_mpi, mpi_args, network_interfaces) -> list[str]:
    args = ["-np", str(int(num_proc))]
    if hosts is not None:
        args += ["-H", hosts]
    if hostfile is not None:
        args += ["--hostfile", str(hostfile)]
    if slots is not None:
        args += ["--slots-per-host", str(int(slots))]
    if start_timeout is not None:
        args += ["--start-timeout", str(start_timeout)]
    if ssh_port is not None:
        args += ["--ssh-port", str(int(ssh_port))]
    if ssh_identity_file is not None:
        args += ["--ssh-identity-file", str(ssh_identity_file)]
    if disable_cache:
        args.append("--disable-cache")
    if output_filename is not None:
        args += ["--output-filename", str(output_filename)]
    if verbose:
        args.append("--verbose")
    if use_gloo:
        args.append("--gloo")
    if use_mpi:
        args.append("--mpi")
        if mpi_args:
            args.append(f"--mpi-args={mpi_args}")
    if network_interfaces:
        args += ["--network-interfaces", ",".join(network_interfaces)]
    return args


def _rank_environment(payload: str, payload_dir: str, remote: bool, marker: str) -> dict:
    env = dict(os.environ)
    env[MARKER_VARIABLE] = marker
    # The ranks import the function's module the way this process can (pickle and cloudpickle
    # pickle importable functions by reference).
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if remote:
        if len(payload) > _MAX_ENVIRONMENT_PAYLOAD:
            raise ValueError(
                f"horovod.run: the pickled function and arguments take {len(payload)} bytes; "
                f"with remote hosts they travel in the environment, which allows at most "
                f"{_MAX_ENVIRONMENT_PAYLOAD}: pass large data another way (files, a dataset "
                "path) instead of as arguments or captured variables")
        env[PAYLOAD_VARIABLE] = payload
    else:
        path = os.path.join(payload_dir, "function")
        with open(path, "w", encoding="ascii") as f:
            f.write(payload)
        env[PAYLOAD_FILE_VARIABLE] = path
    return env


def _forward_output(stream, marker: str, results: dict, echo) -> None:
    for line in stream:
        at = line.find(marker)
        if at < 0:
            echo.write(line)
            echo.flush()
            continue
        fields = line[at + len(marker):].split()
        if len(fields) == 3:
            results[int(fields[0])] = (fields[1], fields[2])


def _results_from_files(output_filename, marker: str, results: dict) -> None:
    # With --output-filename the ranks' stdout may be in DIR/rank.N/stdout only.
    for stdout in Path(output_filename).glob("rank.*/stdout"):
        with open(stdout, encoding="utf-8", errors="replace") as f:
            _forward_output(f, marker, results, _Discard())


class _Discard:
    def write(self, _text):
        pass

    def flush(self):
        pass


def _remote_hosts_given(hosts, hostfile) -> bool:
    if hostfile is not None:
        return True
    if hosts is None:
        return False
    local = {"localhost", "127.0.0.1", "127.0.1.1", "::1"}
    return any(entry.split(":")[0] not in local for entry in hosts.split(","))


def run(func, args=(), kwargs=None, num_proc=1, min_num_proc=None, max_num_proc=None, slots=None,
        reset_limit=None, cooldown_range=None, hosts=None, hostfile=None,
        host_discovery_script=None, start_timeout=None, ssh_port=None, ssh_identity_file=None,
        disable_cache=None, output_filename=None, verbose=None, use_gloo=None, use_mpi=None,
        mpi_args=None, network_interface=None, network_interfaces=None, executable=None,
        np=None, min_np=None, max_np=None):
    """Runs ``func(*args, **kwargs)`` on ``num_proc`` ranks started by kolorun and returns the
    list of the return values, index = rank. The parameters are ``horovod.run``'s (Horovod's
    deprecated ``np``, ``min_np``, ``max_np`` and ``network_interface`` still work, with a
    DeprecationWarning). ``func`` typically calls ``hvd.init()`` itself.

    A rank whose function raises makes the job fail: ``RuntimeError`` naming the rank, the
    exception and its traceback (the exception itself is the ``__cause__`` when it unpickles).
    Elastic parameters (``min_num_proc``, ``max_num_proc``, ``reset_limit``, ``cooldown_range``,
    ``host_discovery_script``) start an elastic job (kolorun's --min-np, --max-np, --reset-limit,
    --blacklist-cooldown-range, --host-discovery-script); ``func`` then runs its training in
    ``hvd.elastic.run``, and the list holds the return values of the workers of the last round,
    index = their final rank.
    """
    if network_interface:
        network_interfaces = network_interface.split(",")
        warnings.warn("network_interface is deprecated, use network_interfaces instead",
                      DeprecationWarning, stacklevel=2)
    if np is not None:
        num_proc = np
        warnings.warn("np is deprecated, use num_proc instead", DeprecationWarning, stacklevel=2)
    if min_np is not None:
        min_num_proc = min_np
        warnings.warn("min_np is deprecated, use min_num_proc instead", DeprecationWarning,
                      stacklevel=2)
    if max_np is not None:
        max_num_proc = max_np
        warnings.warn("max_np is deprecated, use max_num_proc instead", DeprecationWarning,
                      stacklevel=2)
    if hosts is not None and hostfile is not None:
        raise ValueError("Argument hosts and hostfile only allow one provided.")
    if use_gloo and use_mpi:
        raise ValueError("Argument use_gloo and use_mpi only allow one set True.")
    elastic = _elastic_arguments(min_num_proc, max_num_proc, reset_limit, cooldown_range,
                                 host_discovery_script)
    if int(num_proc) < 1:
        raise ValueError(f"horovod.run: num_proc must be at least 1, got {num_proc}")

    payload = encode((func, tuple(args), dict(kwargs or {})))
    marker = f"@kolo-run-result-{secrets.token_hex(8)}@"
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="kolo-run-") as payload_dir:
        env = _rank_environment(payload, payload_dir, _remote_hosts_given(hosts, hostfile), marker)
        command = [_kolorun(), *_launcher_arguments(
            num_proc, slots, hosts, hostfile, start_timeout, ssh_port, ssh_identity_file,
            disable_cache, output_filename, verbose, use_gloo, use_mpi, mpi_args,
            network_interfaces), *elastic, "-x", MARKER_VARIABLE]
        command += ["-x", PAYLOAD_VARIABLE] if PAYLOAD_VARIABLE in env else []
        command += [executable or sys.executable, "-m", "kolo._run_task"]
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace")
        reader = threading.Thread(target=_forward_output,
                                  args=(process.stdout, marker, results, sys.stdout), daemon=True)
        reader.start()
        returncode = process.wait()
        reader.join()
    if output_filename is not None and len(results) < int(num_proc):
        _results_from_files(output_filename, marker, results)
    if elastic:
        # The workers of the last round report under their final ranks; their number is only
        # known at the end (workers lost, added or removed on the way report nothing).
        return _collect(results, len(results) or int(num_proc), returncode, use_mpi)
    return _collect(results, int(num_proc), returncode, use_mpi)


def _failure_lead(use_mpi, returncode: int) -> str:
    """Horovod's first words for a failed run, which callers match: its MPI runner's, else its
    Gloo runner's."""
    if use_mpi:
        return f"mpirun failed with exit code {returncode}."
    return NON_ZERO_EXIT_MESSAGE


def _collect(results: dict, num_proc: int, returncode: int, use_mpi=None) -> list:
    failures = sorted(rank for rank, (kind, _) in results.items() if kind == "error")
    if failures:
        rank = failures[0]
        type_name, message, trace, exception = decode(results[rank][1])
        others = f" (ranks {failures} all raised)" if len(failures) > 1 else ""
        raise RuntimeError(f"{_failure_lead(use_mpi, returncode)} horovod.run: rank {rank} "
                           f"raised {type_name}: {message}{others}\n"
                           f"Traceback on rank {rank}:\n{trace}") from exception
    missing = [rank for rank in range(num_proc) if rank not in results]
    if returncode != 0 or missing:
        raise RuntimeError(f"{_failure_lead(use_mpi, returncode)} horovod.run: the job failed "
                           f"(kolorun exit status {returncode}); no result from rank(s) "
                           f"{missing} (see the output above)")
    return [decode(results[rank][1]) for rank in range(num_proc)]
