"""Elastic reset time: from a worker's SIGKILL to the survivors having joined the next round and
synced (init() returned and a broadcast from the new rank 0 completed), at np 3 -> 2 on this
machine, kolorun's fixed -H pool.

    python3 bench/elastic/reset_time.py [--trials 5] [--np 3]

Runs tests/python/workers/elastic_loop.py (plain kolo, no torch; no model broadcast included)
under kolorun --min-np 2 with the worker of slot 1 killing itself at step 5, and prints the
median, min and max over the trials of: kill -> last survivor resumed. The issue's target is
under 5 s at np 3 (plus the model broadcast, which this excludes).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "..", "tests", "python", "workers", "elastic_loop.py")
KILL = re.compile(r"<stdout>:TIME kill ([0-9.]+)$")
RESUMED = re.compile(r"<stdout>:TIME resumed (\d+) ([0-9.]+)$")


def trial(np: int) -> float:
    kolorun = os.environ.get("KOLORUN_PATH", "kolorun")
    env = dict(os.environ, OMP_NUM_THREADS="1", ELASTIC_TEST_STEPS="15",
               ELASTIC_TEST_STEP_SECONDS="0.05", ELASTIC_TEST_TIMES="1",
               ELASTIC_TEST_DIE="localhost:1#1@5")
    proc = subprocess.run([kolorun, "-np", str(np), "--min-np", "2", "-H", f"localhost:{np}",
                           sys.executable, WORKER], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"elastic run failed ({proc.returncode}):\n{proc.stdout}")
    killed = [float(m.group(1)) for m in map(KILL.search, proc.stdout.splitlines()) if m]
    resumed = [float(m.group(2)) for m in map(RESUMED.search, proc.stdout.splitlines())
               if m and m.group(1) == "2"]
    if len(killed) != 1 or len(resumed) != np - 1:
        raise SystemExit(f"unexpected output (kills {killed}, resumed {resumed}):\n{proc.stdout}")
    return max(resumed) - killed[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--np", type=int, default=3)
    args = parser.parse_args()
    times = [trial(args.np) for _ in range(args.trials)]
    print(f"elastic reset at np {args.np} -> {args.np - 1} (SIGKILL to every survivor resumed), "
          f"{args.trials} trials: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s, max {max(times):.3f} s; target < 5 s: "
          f"ratio {statistics.median(times) / 5.0:.2f}")


if __name__ == "__main__":
    main()
