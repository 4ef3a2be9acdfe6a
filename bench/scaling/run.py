#!/usr/bin/env python3
"""kolo's allreduce past this machine, in one command: measure each algorithm with kolo-bench
(-a forces it) on loopback TCP, shared memory and network namespaces joined by 10 Gb/s veth
links; fit alpha, beta, gamma per transport on np 2; check the fitted model against the other
runs (np 3 here, np 2..6 across three namespaces: medians, predictions, ratios side by side);
then project to 8..256 ranks on 25 and 100 Gb/s networks.

    flock /tmp/kolo-netns.lock flock /work/wt/bench.lock python3 bench/scaling/run.py

Needs root for the namespaces (--no-netns skips them, and the projection then uses the loopback
TCP fit). The method and the figures: bench/SCALING.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
import model  # noqa: E402
import plot  # noqa: E402
import project  # noqa: E402

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

FIT_ALGORITHMS = {"tcp": ("ring", "recursive_doubling"),
                  "shm": ("ring", "recursive_doubling"),
                  "arena": ("shared_memory",),
                  "veth": ("ring", "recursive_doubling")}
# Across the namespaces every np spans at least two hosts (kolorun fills -H hosts in order).
VETH_PLACEMENT = {2: "ns1:1,ns2:1", 3: "ns1:1,ns2:1,ns3:1", 4: "ns1:2,ns2:2",
                  5: "ns1:2,ns2:2,ns3:1", 6: "ns1:2,ns2:2,ns3:2"}


def local_cases() -> list[measure.Case]:
    cases = []
    for np_ in (2, 3):
        for algorithm in FIT_ALGORITHMS["tcp"]:
            cases.append(measure.Case("tcp", np_, algorithm))
        for algorithm in FIT_ALGORITHMS["shm"]:
            cases.append(measure.Case("shm", np_, algorithm))
        cases.append(measure.Case("arena", np_, "shared_memory"))
    return cases


def veth_cases() -> list[measure.Case]:
    cases = [measure.Case("veth", 2, a, VETH_PLACEMENT[2], 2) for a in FIT_ALGORITHMS["veth"]]
    for np_, hostlist in VETH_PLACEMENT.items():
        cases.append(measure.Case("veth", np_, "auto", hostlist, hostlist.count(",") + 1))
    return cases


def environment(case: measure.Case) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if case.transport == "tcp":
        env["KOLO_SHM_DISABLE"] = "1"
    return env


def measurement_parser(description: str, plot_name: str | None = None) -> argparse.ArgumentParser:
    """The options of measure_or_replay() and the plot's, shared with run_collectives.py."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-bytes", default="64M")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--gbit", type=float, default=10, help="veth shaping, Gb/s")
    parser.add_argument("--no-netns", action="store_true", help="skip the namespaces")
    parser.add_argument("--json", type=Path, help="also write every run's table here")
    parser.add_argument("--replay", type=Path,
                        help="fit, check and project the runs of a --json file; measure nothing")
    if plot_name:
        parser.add_argument("--plot", type=Path, default=IMAGES / plot_name,
                            help="the projection as a PNG (needs matplotlib; default: "
                                 "%(default)s)")
    return parser


def measure_or_replay(args, local_cases_of, veth_cases_of, environment_of) -> list[measure.Case]:
    """The cases of a --replay file; else every local case and, unless --no-netns, every veth case
    measured in interleaved rounds, the load printed before and after, written to --json. Shared
    with run_collectives.py."""
    if args.replay:
        saved = json.loads(args.replay.read_text())
        cases = [measure.Case(**case) for case in saved["cases"]]
        for case in cases:  # JSON keys are strings
            case.runs = [{int(n): t for n, t in run.items()} for run in case.runs]
        print(f"# replaying {args.replay}: {saved['load']}")
        return cases
    sweep = measure.Sweep(max_bytes=args.max_bytes, iterations=args.iterations)
    before = Path("/proc/loadavg").read_text().strip()
    print(f"# load before: {before}  cpus: {os.cpu_count()}")
    cases = local_cases_of()
    run_rounds(cases, args.rounds, sweep, environment_of)
    if not args.no_netns:
        import netns  # noqa: PLC0415 (needs root; only when used)

        remote = veth_cases_of()
        with netns.ShapedCluster(3, args.gbit) as cluster:
            run_rounds(remote, args.rounds, sweep, lambda case: cluster.env(OMP_NUM_THREADS="1"))
        cases += remote
    after = Path("/proc/loadavg").read_text().strip()
    print(f"# load after: {after}")
    if args.json:
        args.json.write_text(json.dumps({"load": f"before {before}, after {after}",
                                         "cases": [vars(case) for case in cases]}, indent=1))
    return cases


def run_rounds(cases: list[measure.Case], rounds: int, sweep: measure.Sweep, env_of) -> None:
    """Every round runs every case once, so slow phases of the shared machine spread evenly."""
    for round_ in range(rounds):
        for case in cases:
            started = time.monotonic()
            measure.run_case(case, sweep, env_of(case))
            print(f"# round {round_ + 1}/{rounds}: {case.label()} "
                  f"({time.monotonic() - started:.1f} s)", flush=True)


# The fit takes each size's fastest run: on 2 shared cores a step costs ~8 us when both ranks
# have a core and ~30 us when one waits for the other's (whole runs land in one mode or the
# other); a cluster node gives each rank its own cores. The check compares medians.
# Recursive doubling allocates its scratch buffer per call: above a few MiB that is fresh pages
# from the kernel every time (page faults, not the network), which the model leaves out.
RD_FIT_MAX_BYTES = 2 << 20


def fit_transport(cases: list[measure.Case], transport: str):
    samples = []
    for case in cases:
        if case.transport == transport and case.np == 2 and case.algorithm != "auto":
            steps_of = getattr(model, case.algorithm)
            samples += [(steps_of(2, n), n, t) for n, t in case.best().items()
                        if case.algorithm != "recursive_doubling" or n <= RD_FIT_MAX_BYTES]
    return model.fit(samples)


def predict(case: measure.Case, n: int, links: dict[str, model.Link]) -> tuple[str, float]:
    """The model's time for one measured case and size, with the algorithm it runs."""
    if case.algorithm != "auto":
        link = links[case.transport]
        return case.algorithm, link.time(getattr(model, case.algorithm)(case.np, n), n)
    per_host = [int(part.split(":")[1]) for part in case.hostlist.split(",")]
    pick = model.kolo_pick(case.np, len(per_host), n)
    if pick != "hierarchical":
        return pick, links["veth"].time(getattr(model, pick)(case.np, n), n)
    if len(set(per_host)) == 1:
        return pick, model.hierarchical_time(case.np, per_host[0], n, links["veth"], links["shm"])
    return "hierarchical(uneven)", model.uneven_hierarchical_time(
        per_host, n, links["veth"], links["arena"], links["shm"])


def print_fits(links, qualities) -> None:
    print("\n## Fitted costs per transport (np 2, ring + recursive doubling, arena alone; each "
          "size's fastest run)\n")
    print("| transport | alpha (us) | beta (ns/B) | 1/beta (GB/s) | gamma (ns/B) | samples |"
          " median abs error | worst pred/meas |")
    print("|---|---|---|---|---|---|---|---|")
    for name, link in links.items():
        q = qualities[name]
        bandwidth = f"{1e-9 / link.beta:.2f}" if link.beta > 0 else "inf"
        print(f"| {name} | {link.alpha * 1e6:.2f} | {link.beta * 1e9:.4f} | {bandwidth} | "
              f"{link.gamma * 1e9:.4f} | {q['samples']} | {q['median_error'] * 100:.1f}% | "
              f"{q['worst_ratio']:.2f} |")


def print_check(cases, links) -> None:
    print("\n## Check: measured medians against the model (pred/meas)\n")
    for case in cases:
        if case.np == 2 and case.algorithm != "auto":
            continue  # fitted on these
        medians = case.medians()
        print(f"\n### {case.label()}  ({len(case.runs)} runs)\n")
        print("| bytes | measured us | algorithm | predicted us | pred/meas |")
        print("|---|---|---|---|---|")
        for n, t in medians.items():
            algorithm, predicted = predict(case, n, links)
            print(f"| {n} | {t * 1e6:.1f} | {algorithm} | {predicted * 1e6:.1f} | "
                  f"{predicted / t:.2f} |")


def main() -> None:
    parser = measurement_parser(__doc__, "scaling_allreduce.png")
    args = parser.parse_args()
    cases = measure_or_replay(args, local_cases, veth_cases, environment)

    links, qualities = {}, {}
    for transport in FIT_ALGORITHMS:
        if any(c.transport == transport for c in cases):
            links[transport], qualities[transport] = fit_transport(cases, transport)
    print_fits(links, qualities)
    print_check(cases, links)
    name = "veth" if "veth" in links else "tcp"
    project.print_projection(name, links[name], links["shm"], args.gbit)
    print("\n" + plot.allreduce(args.plot, links[name], links["shm"]))


if __name__ == "__main__":
    main()
