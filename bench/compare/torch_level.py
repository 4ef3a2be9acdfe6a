#!/usr/bin/env python3
"""kolo against the real Horovod 0.28.1 at the level users call: blocking horovod.torch
collectives on torch tensors at a few sizes, interleaved rounds, one command.

    python3 bench/compare/torch_level.py --horovod-python ~/.cache/kolo/horovod-0.28.1/bin/python
    python3 bench/compare/torch_level.py --np 2 --rounds 5 -t allreduce --sizes 8,256K,16M

A separate table from compare.py's on purpose: compare.py times kolo's C++ collectives
(kolo-bench) against MPI's and gloo's, while Horovod has no such layer to time apart from its
Python front end, background thread and negotiation; here both sides pay all of those. The same
script (torch_level_cases.py) runs under kolorun (horovod.torch is kolo's) and under the
Horovod venv's own horovodrun (bench/horovod_reference builds it; --horovod-controller gloo by
default, or mpi), with both libraries' defaults (fusion threshold 128 MiB, cycle time 1 ms).
Ranks are pinned one per core when np <= cores. Prints each case's median over rounds of each
round's median (us) and Horovod/kolo (> 1: kolo is faster). Without --horovod-python only
kolo runs, and a line says the Horovod peer was skipped.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "horovod_reference"))
import launch as horovod_reference  # noqa: E402  (bench/horovod_reference/launch.py)

COLLECTIVES = ("allreduce", "allgather", "broadcast")
UNITS = {"K": 1 << 10, "M": 1 << 20}

Samples = dict[tuple[str, int], list[float]]  # (collective, bytes) -> one median per round


def parse_size(text: str) -> int:
    text = text.strip().upper()
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def rows(text: str) -> dict[tuple[str, int], float]:
    """(collective, bytes) -> median us from the ranks' "collective<TAB>bytes<TAB>us" lines
    (launchers' rank tags stripped)."""
    found = {}
    for line in horovod_reference.untagged_lines(text):
        fields = line.split("\t")
        if len(fields) == 3 and fields[0] in COLLECTIVES:
            found[(fields[0], int(fields[1]))] = float(fields[2])
    return found


def ratio_table(kolo: Samples, horovod: Samples) -> list[str]:
    """Markdown rows: collective, size, both medians, Horovod/kolo."""
    lines = ["| collective | bytes | kolo us | Horovod 0.28.1 us | Horovod/kolo |",
             "| --- | --- | --- | --- | --- |"]
    for key, values in kolo.items():
        mine = statistics.median(values)
        peer = statistics.median(horovod[key]) if horovod.get(key) else None
        lines.append(f"| {key[0]} | {key[1]} | {mine:.1f} | "
                     + (f"{peer:.1f} | {peer / mine:.2f} |" if peer else "- | - |"))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-t", "--collectives", default=",".join(COLLECTIVES))
    parser.add_argument("--sizes", default="8,4K,256K,2M,16M")
    parser.add_argument("--kolorun", default=shutil.which("kolorun") or "kolorun")
    parser.add_argument("--no-bind", dest="bind", action="store_false")
    parser.add_argument("--horovod-python",
                        help="the python of a venv with the real Horovod 0.28.1")
    parser.add_argument("--horovod-controller", choices=horovod_reference.CONTROLLERS,
                        default="gloo")
    args = parser.parse_args()
    for name in args.collectives.split(","):
        if name not in COLLECTIVES:
            sys.exit(f"unknown collective '{name}' (one of {', '.join(COLLECTIVES)})")
    sizes = ",".join(str(parse_size(s)) for s in args.sizes.split(","))
    pin = args.bind and args.np <= (os.cpu_count() or 1)
    script = [str(HERE / "torch_level_cases.py"), args.collectives, sizes]
    kolo_command = [sys.executable, *script]
    if pin:
        kolo_command = ["bash", "-c", 'exec taskset -c "$KOLO_RANK" "$@"', "pin", *kolo_command]
    kolo_command = [args.kolorun, "-np", str(args.np), *kolo_command]
    if not args.horovod_python:
        print("# Horovod peer skipped (no --horovod-python; bench/horovod_reference/build.sh "
              "builds the real Horovod 0.28.1)", flush=True)

    load_before = os.getloadavg()[0]
    kolo: Samples = {}
    horovod: Samples = {}
    for round_ in range(args.rounds):
        print(f"# round {round_ + 1}/{args.rounds}", file=sys.stderr, flush=True)
        for key, us in rows(horovod_reference.output(kolo_command)).items():
            kolo.setdefault(key, []).append(us)
        if args.horovod_python:
            python = args.horovod_python
            command = horovod_reference.horovodrun(python, args.np, args.horovod_controller,
                                                   [python, *script], pin=pin)
            text = horovod_reference.output(command, env=horovod_reference.environment(python))
            for key, us in rows(text).items():
                horovod.setdefault(key, []).append(us)
    print(f"# horovod.torch blocking collectives, float32, np {args.np}, "
          f"{'pinned' if pin else 'not pinned'}, Horovod controller {args.horovod_controller}; "
          f"medians over {args.rounds} interleaved rounds; load average (1 min) before "
          f"{load_before:.2f}, after {os.getloadavg()[0]:.2f}")
    print("\n".join(ratio_table(kolo, horovod)))


if __name__ == "__main__":
    main()
