#!/usr/bin/env python3
"""Per-operation overhead of a small allreduce: kolo's Python front ends beside their peers.

    python3 bench/perop/run.py                      # np 2, 5 interleaved rounds
    python3 bench/perop/run.py --np 3 --rounds 3 --iters 1000

Each round runs, in turn (interleaved, so a noisy neighbour hurts every case alike):
  - kolo under kolorun (bench/perop/kolo_cases.py): blocking 8-byte hvd.allreduce through
    horovod.torch (named, so the response cache knows it; and unnamed, a new name every call),
    kolo.allreduce on NumPy, and 100 async in-place allreduces then synchronize() on each (time
    per tensor);
  - kolo-bench (the C++ collective alone, no Python, no negotiation; its mean, for reference);
  - torch.distributed gloo all_reduce (one process per rank, rendezvous on loopback);
  - OpenMPI MPI_Allreduce from a small C program (mpicc) and through mpi4py on NumPy;
  - with --horovod-python VENV/bin/python: the real Horovod 0.28.1 (bench/horovod_reference
    builds it) running the same kolo_cases.py under that venv's horovodrun (gloo controller and
    gloo CPU ops by default; --horovod-controller mpi for OpenMPI's), and a column of
    Horovod/kolo ratios beside each kolo case that Horovod also runs. Without it, a line says the
    Horovod peer was skipped.
Ranks are pinned one per core (taskset; mpirun --bind-to core) when np <= cores, as
bench/compare/compare.py does. Every Python case times each call alone; the table shows, per
case, the median over rounds of each round's median and 90th percentile (us), and the ratio of
each kolo case to gloo and to OpenMPI (C): peer time / kolo time, > 1 means kolo is faster.
Beside the pinned kolo cases, each round also runs them the way users launch them, a plain
`kolorun -np N python ...` (kolo's own placement, docs/guide/placement.md): the "plain us"
column is the median over rounds of those jobs' medians, "plain min" and "plain max" the
fastest and the slowest job's median (every job must be fast, not the typical one). With
--no-bind the main column is already plain.
The load average is printed before and after: on a shared machine it says how far to trust it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "horovod_reference"))
import launch as horovod_reference  # noqa: E402  (bench/horovod_reference/launch.py)

HOROVOD_LABEL = horovod_reference.LABEL


def run(command: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                           f"{done.stderr}")
    return done.stdout


def rows(text: str) -> dict[str, tuple[float, float]]:
    """case -> (median us, p90 us) from "case<TAB>median<TAB>p90" lines (kolorun's and
    horovodrun's rank tags stripped)."""
    found = {}
    for line in horovod_reference.untagged_lines(text):
        fields = line.split("\t")
        if len(fields) == 3:
            found[fields[0]] = (float(fields[1]), float(fields[2]))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def horovod_ratio(case: str, medians: dict[str, float]) -> float | None:
    """Horovod's median / kolo's for kolo's `case`, where the real Horovod ran the same case
    (> 1: kolo is faster); None for Horovod's own rows and cases it does not run."""
    peer = medians.get(HOROVOD_LABEL + case)
    mine = medians.get(case)
    if peer is None or not mine or case.startswith(HOROVOD_LABEL):
        return None
    return peer / mine


class Cases:
    def __init__(self, args: argparse.Namespace, scratch: Path):
        self.args = args
        self.np = str(args.np)
        self.pin = args.bind and args.np <= (os.cpu_count() or 1)
        self.counts = [str(args.iters), str(args.warmup)]
        self.mpi_binary = scratch / "peer_mpi"
        run(["mpicc", "-O2", "-o", str(self.mpi_binary), str(HERE / "peer_mpi.c")])

    def under_kolorun(self, command: list[str], pin: bool | None = None) -> list[str]:
        if self.pin if pin is None else pin:  # each rank on the core numbered like its rank
            command = ["bash", "-c", 'exec taskset -c "$KOLO_RANK" "$@"', "perop", *command]
        return [self.args.kolorun, "-np", self.np, *command]

    def kolo(self) -> dict[str, tuple[float, float]]:
        return rows(run(self.under_kolorun(
            [sys.executable, str(HERE / "kolo_cases.py"), *self.counts])))

    def kolo_plain(self) -> dict[str, tuple[float, float]]:
        """The kolo cases under a plain `kolorun -np N` (no taskset): what users run."""
        return rows(run(self.under_kolorun(
            [sys.executable, str(HERE / "kolo_cases.py"), *self.counts], pin=False)))

    def kolo_bench(self) -> dict[str, tuple[float, float]]:
        text = run(self.under_kolorun([self.args.kolo_bench, "-t", "allreduce", "-b", "8", "-e",
                                       "8", "-n", str(self.args.iters), "-w",
                                       str(self.args.warmup), "-d", "float", "-o", "sum"]))
        for line in text.splitlines():
            fields = line.split(">:", 1)[-1].split()
            if len(fields) >= 8 and fields[0] == "8":
                mean = float(fields[4])
                return {"kolo-bench C++ allreduce 8 B (mean)": (mean, mean)}
        raise RuntimeError(f"kolo-bench printed no 8-byte row:\n{text}")

    def gloo(self) -> dict[str, tuple[float, float]]:
        port = free_port()
        procs = []
        for rank in range(self.args.np):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=self.np, MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            command = [sys.executable, str(HERE / "peer_gloo.py"), *self.counts]
            if self.pin:
                command = ["taskset", "-c", str(rank), *command]
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        outputs = [p.communicate(timeout=600) for p in procs]
        for p, (out, err) in zip(procs, outputs):
            if p.returncode != 0:
                raise RuntimeError(f"gloo rank failed ({p.returncode}):\n{out}\n{err}")
        return rows(outputs[0][0])

    def horovod(self) -> dict[str, tuple[float, float]]:
        python = self.args.horovod_python
        command = horovod_reference.horovodrun(
            python, self.args.np, self.args.horovod_controller,
            [python, str(HERE / "kolo_cases.py"), *self.counts], pin=self.pin)
        return rows(run(command, env=horovod_reference.environment(python)))

    def mpirun(self, command: list[str]) -> dict[str, tuple[float, float]]:
        launch = ["mpirun", "-np", self.np, "--mca", "btl", "self,vader",
                  "--bind-to", "core" if self.pin else "none"]
        if os.geteuid() == 0:
            launch.append("--allow-run-as-root")
        if self.args.np > (os.cpu_count() or 1):
            launch.append("--oversubscribe")
        return rows(run(launch + command))

    def mpi(self) -> dict[str, tuple[float, float]]:
        return self.mpirun([str(self.mpi_binary), *self.counts])

    def mpi4py(self) -> dict[str, tuple[float, float]]:
        return self.mpirun([sys.executable, str(HERE / "peer_mpi4py.py"), *self.counts])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", "--iters", type=int, default=2000,
                        help="timed calls per case and round (the async case: iters/100 "
                             "batches)")
    parser.add_argument("-w", "--warmup", type=int, default=200)
    parser.add_argument("--kolorun", default=shutil.which("kolorun") or "kolorun")
    parser.add_argument("--kolo-bench", default=shutil.which("kolo-bench") or "kolo-bench")
    parser.add_argument("--no-bind", dest="bind", action="store_false",
                        help="do not pin ranks to cores")
    parser.add_argument("--skip", default="",
                        help="comma list of peers to leave out: gloo,mpi,mpi4py,kolo-bench, "
                             "plain (the plain-launch column)")
    parser.add_argument("--horovod-python",
                        help="the python of a venv with the real Horovod 0.28.1 "
                             "(bench/horovod_reference/build.sh): add it as a peer")
    parser.add_argument("--horovod-controller", choices=horovod_reference.CONTROLLERS,
                        default="gloo",
                        help="horovodrun's controller for the Horovod peer (default: gloo)")
    args = parser.parse_args(argv)
    if shutil.which("mpicc") is None:
        sys.exit("perop: mpicc not found (apt-get install openmpi-bin libopenmpi-dev)")
    skip = set(filter(None, args.skip.split(",")))
    load_before = os.getloadavg()
    samples: dict[str, list[tuple[float, float]]] = {}
    plain: dict[str, list[tuple[float, float]]] = {}  # kolo cases under a plain kolorun
    with tempfile.TemporaryDirectory() as scratch:
        cases = Cases(args, Path(scratch))
        peers = [("kolo", cases.kolo), ("kolo-bench", cases.kolo_bench), ("gloo", cases.gloo),
                 ("mpi", cases.mpi), ("mpi4py", cases.mpi4py)]
        if args.horovod_python:
            peers.append(("horovod", cases.horovod))
        else:
            print("# Horovod peer skipped (no --horovod-python; bench/horovod_reference/build.sh "
                  "builds the real Horovod 0.28.1)", flush=True)
        for round_ in range(args.rounds):
            print(f"# round {round_ + 1}/{args.rounds}", file=sys.stderr, flush=True)
            for name, measure in peers:
                if name in skip:
                    continue
                for case, values in measure().items():
                    samples.setdefault(case, []).append(values)
            if cases.pin and "plain" not in skip:
                for case, values in cases.kolo_plain().items():
                    plain.setdefault(case, []).append(values)
    load_after = os.getloadavg()

    def median(case: str, which: int) -> float:
        return statistics.median(values[which] for values in samples[case])

    gloo = next((median(c, 0) for c in samples if c.startswith("gloo")), None)
    mpi = next((median(c, 0) for c in samples if c.endswith("(C)")), None)
    pinning = "pinned one per core" if cases.pin else "not pinned"
    print(f"# per-op overhead, np {args.np}, ranks {pinning}; medians over {args.rounds} "
          f"interleaved rounds of {args.iters} calls ({args.warmup} warm-up)")
    print(f"# load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    medians = {case: median(case, 0) for case in samples}
    horovod = f" {'hvd/this':>10}" if args.horovod_python else ""
    print(f"# {'case':<52} {'median us':>10} {'p90 us':>10} {'gloo/this':>10} "
          f"{'mpi/this':>10}{horovod} {'plain us':>10} {'plain min':>10} {'plain max':>10}")
    for case in samples:
        mid = medians[case]
        ratios = [f"{peer / mid:10.3g}" if peer and mid > 0 else f"{'-':>10}"
                  for peer in (gloo, mpi)]
        if args.horovod_python:
            ratio = horovod_ratio(case, medians)
            ratios.append(f"{ratio:10.3g}" if ratio else f"{'-':>10}")
        jobs = [values[0] for values in plain.get(case, [])]
        ratios += [f"{value:10.2f}" for value in (statistics.median(jobs), min(jobs), max(jobs))] \
            if jobs else [f"{'-':>10}"] * 3
        print(f"  {case:<52} {mid:10.2f} {median(case, 1):10.2f} {' '.join(ratios)}")


if __name__ == "__main__":
    main()
