"""Many tiny tensors per step at np 3 (a large transformer's parameter list): step time and the
negotiation cost per step.

    python3 bench/load/run.py [--steps 40] [--tensors 2000] [--np 3] [--warmup 5]

Runs tests/faults/workers/load_worker.py under kolorun over TCP and over shared memory, with the
response cache on (its capacity raised to hold every name) and off, and prints per
configuration the median step time, its 10th/90th percentiles (stability), and the median time
the background thread spent negotiating per step (stats()["negotiation_us"]: controller cycles,
peer waits included), with negotiation's share of the step, and the drift: median step time of
the second half of the steps over the first half's (1.00: no slowdown as the run goes on).
Rank 0's figures; warm-up steps (the first, full negotiation of every name) are left out.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "..", "tests", "faults", "workers", "load_worker.py")
STEP = re.compile(r"^\[0\]<stdout>:STEP (\d+) ms=([0-9.]+) negotiation_ms=([0-9.]+)$")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(args, env_extra: dict[str, str]) -> tuple[list[float], list[float]]:
    kolorun = os.environ.get("KOLORUN_PATH", "kolorun")
    env = dict(os.environ, OMP_NUM_THREADS="1", **env_extra)
    proc = subprocess.run([kolorun, "-np", str(args.np), sys.executable, WORKER,
                           str(args.steps + args.warmup), str(args.tensors)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=1200, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"load run failed ({proc.returncode}):\n{proc.stdout}")
    steps, negotiation = [], []
    for line in proc.stdout.splitlines():
        match = STEP.match(line)
        if match and int(match.group(1)) >= args.warmup:
            steps.append(float(match.group(2)))
            negotiation.append(float(match.group(3)))
    return steps, negotiation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--tensors", type=int, default=2000)
    parser.add_argument("--np", type=int, default=3)
    args = parser.parse_args()
    capacity = str(max(1024, 2 * args.tensors))
    configs = [
        ("tcp, cache on", {"KOLO_SHM_DISABLE": "1", "KOLO_CACHE_CAPACITY": capacity}),
        ("tcp, cache off", {"KOLO_SHM_DISABLE": "1", "KOLO_CACHE_CAPACITY": "0"}),
        ("shm, cache on", {"KOLO_SHM_DISABLE": "0", "KOLO_CACHE_CAPACITY": capacity}),
        ("shm, cache off", {"KOLO_SHM_DISABLE": "0", "KOLO_CACHE_CAPACITY": "0"}),
    ]
    print(f"{args.tensors} tensors/step, np {args.np}, {args.steps} steps after {args.warmup} "
          "warm-up; rank 0; milliseconds")
    print(f"{'configuration':<16} {'step median':>11} {'p10':>8} {'p90':>8} "
          f"{'negotiation median':>18} {'share':>6} {'drift':>6}")
    for label, env in configs:
        steps, negotiation = run(args, env)
        step_median = statistics.median(steps)
        negotiation_median = statistics.median(negotiation)
        half = len(steps) // 2
        drift = statistics.median(steps[half:]) / statistics.median(steps[:half])
        print(f"{label:<16} {step_median:>11.2f} {quantile(steps, 0.1):>8.2f} "
              f"{quantile(steps, 0.9):>8.2f} {negotiation_median:>18.2f} "
              f"{negotiation_median / step_median:>6.0%} "
              f"{drift:>6.2f}")


if __name__ == "__main__":
    main()
