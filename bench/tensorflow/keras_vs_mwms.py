"""kolo against TensorFlow's own MultiWorkerMirroredStrategy on the same Keras CNN and data
(Fashion-MNIST from Debian's package) at 2 ranks on this machine, both on tf-keras (see
QUIET), one command:

    python3 bench/tensorflow/keras_vs_mwms.py [--rounds 3] [--steps 200] [--batch 64]

Each round runs kolo (kolorun -np 2, horovod.tensorflow.keras's DistributedOptimizer), then
MWMS (two processes, TF_CONFIG on loopback, TF's ring collectives), then the same two ranks
with no communication at all (placed by kolorun, each training its own copy: the ceiling), so a
busy machine slows all alike. Prints per round and then the medians: global samples/s over the
timed steps (after --warmup), peak RSS per rank (ru_maxrss), test accuracy after training; and
kolo's ratios to MWMS (the goal is >= 1.2x samples/s) and to the ceiling. The worker is
keras_cnn_worker.py."""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = str(Path(__file__).resolve().parent / "keras_cnn_worker.py")
# tf-keras for both: Keras 3.15's model.fit fails under MWMS on this TensorFlow (it converts the
# per-replica batch to one tensor: "unsupported type ... PerReplica").
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1", "TF_USE_LEGACY_KERAS": "1"}


def results(output: str) -> list:
    found = []
    for line in output.splitlines():
        start = line.find('{"mode"')
        if start >= 0:
            found.append(json.loads(line[start:]))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_kolo(kolorun: str, flags: list, timeout: float, mode: str = "kolo") -> list:
    done = subprocess.run([kolorun, "-np", "2", sys.executable, WORKER, "--mode", mode, *flags],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **QUIET})
    if done.returncode:
        sys.exit(f"{mode} run failed:\n{done.stdout}\n{done.stderr}")
    return results(done.stdout)


def run_mwms(flags: list, timeout: float) -> list:
    workers = [f"127.0.0.1:{free_port()}" for _ in range(2)]
    procs = []
    for index in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = {**os.environ, **QUIET, "TF_CONFIG": json.dumps(config)}
        procs.append(subprocess.Popen([sys.executable, WORKER, "--mode", "mwms", *flags],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=env))
    outputs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            sys.exit("MWMS run did not finish in time")
        if proc.returncode:
            for other in procs:
                other.kill()
            sys.exit(f"MWMS worker failed:\n{out}\n{err}")
        outputs.append(out)
    return results("\n".join(outputs))


def summary(runs: list) -> dict:
    return {"samples_per_s": runs[0]["samples_per_s"],
            "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
            "accuracy": runs[0]["accuracy"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="per-rank batch")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    kolorun = os.environ.get("KOLORUN_PATH") or shutil.which("kolorun")
    if not kolorun:
        sys.exit("kolorun is not on PATH (set KOLORUN_PATH)")
    flags = ["--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch)]
    table = {"kolo": [], "mwms": [], "local": []}
    for round_ in range(args.rounds):
        for mode, run in (("kolo", lambda: run_kolo(kolorun, flags, args.timeout)),
                          ("mwms", lambda: run_mwms(flags, args.timeout)),
                          ("local", lambda: run_kolo(kolorun, flags, args.timeout, "local"))):
            runs = run()
            if len(runs) != 2:
                sys.exit(f"{mode}: expected one result per rank, got {runs}")
            row = summary(sorted(runs, key=lambda r: r["rank"]))
            table[mode].append(row)
            print(f"round {round_ + 1} {mode:5}: {row['samples_per_s']:8.1f} samples/s, peak RSS "
                  f"{row['peak_rss_mib']:7.1f} MiB/rank, accuracy {row['accuracy']:.4f}",
                  flush=True)
    medians = {mode: {key: statistics.median(row[key] for row in rows) for key in rows[0]}
               for mode, rows in table.items()}
    for mode, m in medians.items():
        print(f"median {mode:5}: {m['samples_per_s']:8.1f} samples/s, peak RSS "
              f"{m['peak_rss_mib']:7.1f} MiB/rank, accuracy {m['accuracy']:.4f}")
    k, w, c = medians["kolo"], medians["mwms"], medians["local"]
    print(f"kolo / MWMS: samples/s {k['samples_per_s'] / w['samples_per_s']:.2f}x (goal >= 1.2x), "
          f"peak RSS {k['peak_rss_mib'] / w['peak_rss_mib']:.2f}x, "
          f"accuracy {k['accuracy'] - w['accuracy']:+.4f}")
    ceiling = c["samples_per_s"]
    print(f"share of the no-communication ceiling: kolo {k['samples_per_s'] / ceiling:.3f}, "
          f"MWMS {w['samples_per_s'] / ceiling:.3f}")


if __name__ == "__main__":
    main()
