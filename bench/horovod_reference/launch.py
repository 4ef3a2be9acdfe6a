"""How the benches start a command under the real Horovod 0.28.1 (the venv that build.sh makes),
shared by bench/perop/run.py and bench/train_vs_ddp/run.py.

The command runs under that venv's own horovodrun, on localhost with one slot per rank, with
the gloo controller (Horovod's gloo CPU ops) or `mpi` (horovodrun --mpi: mpirun and OpenMPI's
collectives). The environment drops PYTHONPATH and VIRTUAL_ENV and puts the venv's bin first,
so that `import horovod` in the ranks is Horovod's own and never kolo's alias package.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

# bench/perop's kolo_cases.py prefixes its case labels with this under the real Horovod.
LABEL = "Horovod 0.28.1 "
CONTROLLERS = ("gloo", "mpi")
# Pins each rank to the core numbered like it: HOROVOD_RANK under gloo, OMPI_COMM_WORLD_RANK
# under mpirun (horovodrun --mpi starts ranks with --bind-to none).
PIN = ["bash", "-c", 'exec taskset -c "${HOROVOD_RANK:-$OMPI_COMM_WORLD_RANK}" "$@"', "pin"]


def horovodrun(python: str, np_: int, controller: str, command: list[str],
               pin: bool = False) -> list[str]:
    """The command line: `python`'s venv's horovodrun starting `command` on np_ local ranks."""
    if controller not in CONTROLLERS:
        raise ValueError(f"Horovod controller '{controller}' is not one of {CONTROLLERS}")
    launcher = Path(python).parent / "horovodrun"
    return [str(launcher), "-np", str(np_), "-H", f"localhost:{np_}", f"--{controller}",
            *(PIN if pin else []), *command]


def environment(python: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default os.environ) without this project's venv and PYTHONPATH, the Horovod
    venv's bin first on PATH."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


# A rank's output tag: "[0]<stdout>:" (horovodrun --gloo), "[1,0]<stdout>:" (mpirun's
# --tag-output under horovodrun --mpi).
_TAG = re.compile(r"\[[0-9,]+\]<std(?:out|err)>:")


def untagged_lines(text: str) -> list[str]:
    """The ranks' lines without their tags. Under horovodrun --mpi one rank's line can arrive
    with another rank's tag glued to its end (no newline between), so every tag starts a line."""
    return [part for line in text.splitlines() for part in _TAG.split(line) if part]


def output(command: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> str:
    """`command`'s stdout; its exit status, stdout and stderr in the error when it fails."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                         f"{done.stderr}")
    return done.stdout
