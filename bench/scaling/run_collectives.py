#!/usr/bin/env python3
"""kolo's broadcast and allgather past this machine, in one command, as run.py does for allreduce:
measure both with kolo-bench on loopback TCP, shared-memory links (the arena off) and, one rank
per host, network namespaces joined by 10 Gb/s veth links; fit one alpha and beta per transport
to both collectives at np 2 together (a link's costs do not depend on the collective); check the
fit against np 3 (medians, predictions, ratios side by side); then project to 8..256 ranks on
25 and 100 Gb/s networks against the algorithms kolo lacks (collective_steps.py).

    flock /tmp/kolo-netns.lock flock /work/wt/bench.lock python3 bench/scaling/run_collectives.py

--no-netns skips the namespaces (the projection then uses the loopback TCP fit). The method and
the figures: bench/SCALING.md, "Broadcast and allgather".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import collective_steps as steps  # noqa: E402
import measure  # noqa: E402
import model  # noqa: E402
import plot  # noqa: E402
import project  # noqa: E402
from run import measure_or_replay, measurement_parser  # noqa: E402

COLLECTIVES = ("broadcast", "allgather")
# One rank per host: the tree's and the ring's every edge is then a veth link.
VETH_PLACEMENT = {2: "ns1:1,ns2:1", 3: "ns1:1,ns2:1,ns3:1"}
# Projected sizes: a small control message, a layer, a large layer, ResNet-50's parameters (what
# broadcast_parameters sends at the start), a 1 B-parameter fp16 model's 2 GB.
BROADCAST_SIZES = (8, 64 << 10, 1 << 20, 16 << 20, 25_557_032 * 4, 2_000_000_000)
ALLGATHER_SIZES = (8 << 10, 512 << 10, 1 << 20, 16 << 20, 256 << 20)


def session_22_pick(collective: str, p: int, n: float) -> str:
    """What kolo ran between hosts before the re-chosen broadcast limits and Bruck's allgather
    (session 22's rules: the chain from (p - 2) MiB over depth - 1 levels, scatter + allgather
    from 8 ranks and (p - 1) x 128 KiB over (depth - 2(p-1)/p), doubling up to 512 KiB on powers
    of two from 4 ranks and other sizes from 6)."""
    depth = steps._depth(p)  # noqa: SLF001 (the same tree depth)
    if collective == "broadcast":
        if p >= 3 and n >= -(-((p - 2) << 20) // (depth - 1)):
            return "chain"
        saved = depth - 2.0 * (p - 1) / p
        return "scatter_allgather" if p >= 8 and n >= (p - 1) * 128 * 1024 / saved else "tree"
    power_of_two = p & (p - 1) == 0
    small = n <= steps.ALLGATHER_DOUBLING_MAX_BYTES
    return "doubling" if small and (p >= 4 if power_of_two else p >= 6) else "ring"

SHORT = {"tree": "tree", "scatter_allgather": "S+AG", "chain": "chain", "ring": "ring",
         "doubling": "RD", "bruck": "Bruck"}


def local_cases() -> list[measure.Case]:
    return [measure.Case(transport, np_, "auto", collective=collective)
            for transport in ("tcp", "shm") for np_ in (2, 3) for collective in COLLECTIVES]


def veth_cases() -> list[measure.Case]:
    return [measure.Case("veth", np_, "auto", hostlist, np_, collective=collective)
            for np_, hostlist in VETH_PLACEMENT.items() for collective in COLLECTIVES]


def environment(case: measure.Case) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if case.transport == "tcp":
        env["KOLO_SHM_DISABLE"] = "1"
    if case.transport == "shm":
        env["KOLO_SHM_ALLREDUCE_BYTES"] = "0"  # the arena serves no collective: links alone
    return env


def kolo_steps(case: measure.Case, n: float) -> tuple[float, float, float]:
    return steps.ALGORITHMS[case.collective][steps.kolo_pick(case.collective, case.np, n)](
        case.np, n)


def latency_hidden(case: measure.Case, n: int) -> bool:
    """kolo-bench times back-to-back calls, and a broadcast's root does not wait for its
    receivers: small broadcasts overlap in the links' buffers, so their time per call is not a
    step's latency (a few hundred ns at np 2 over shared memory). The fit leaves them out."""
    return case.collective == "broadcast" and n < model.LARGE_MIN_BYTES


def fit_transport(cases: list[measure.Case], transport: str):
    """alpha and beta of one transport from both collectives at np 2 (each size's fastest run)."""
    samples = []
    for case in cases:
        if case.transport == transport and case.np == 2:
            samples += [(kolo_steps(case, n), n, t) for n, t in case.best().items()
                        if not latency_hidden(case, n)]
    return model.fit(samples)


def print_fits(links: dict[str, model.Link], qualities: dict) -> None:
    print("\n## Fitted costs per transport (np 2, broadcast and allgather together)\n")
    print("| transport | alpha (us) | beta (ns/B) | 1/beta (GB/s) | samples | median abs error |"
          " worst pred/meas |")
    print("|---|---|---|---|---|---|---|")
    for name, link in links.items():
        q = qualities[name]
        bandwidth = f"{1e-9 / link.beta:.2f}" if link.beta > 0 else "inf"
        print(f"| {name} | {link.alpha * 1e6:.2f} | {link.beta * 1e9:.4f} | {bandwidth} | "
              f"{q['samples']} | {q['median_error'] * 100:.1f}% | {q['worst_ratio']:.2f} |")


def print_check(cases: list[measure.Case], links: dict[str, model.Link]) -> None:
    print("\n## Check: np 3 medians against the model (pred/meas)\n")
    checked = [case for case in cases if case.np != 2]
    for case in checked:
        print(f"\n### {case.label()}  ({len(case.runs)} runs)\n")
        print("| bytes | measured us | algorithm | predicted us | pred/meas |")
        print("|---|---|---|---|---|")
        for n, t in case.medians().items():
            pick = steps.kolo_pick(case.collective, case.np, n)
            predicted = links[case.transport].time(kolo_steps(case, n), n)
            ratio = "overlapped" if latency_hidden(case, n) else f"{predicted / t:.2f}"
            print(f"| {n} | {t * 1e6:.1f} | {pick} | {predicted * 1e6:.1f} | {ratio} |")


def projection_cell(collective: str, p: int, n: float, link: model.Link) -> tuple[str, str]:
    """(kolo's time -> the fastest algorithm's when another wins, the fastest's name)."""
    times = {name: link.time(of(p, n), n) for name, of in steps.ALGORITHMS[collective].items()}
    pick = steps.kolo_pick(collective, p, n)
    best = min(times, key=times.get)
    text = f"{SHORT[pick]} {project.fmt_time(times[pick])}"
    if best != pick and times[best] < 0.95 * times[pick]:  # 5%: inside the model's error
        text += f" -> {SHORT[best]} {project.fmt_time(times[best])}"
    before = session_22_pick(collective, p, n)
    if pick != before:
        text += f" (was {SHORT[before]} {project.fmt_time(times[before])})"
    return text, best


def print_projection(name: str, network: model.Link) -> None:
    print("\n## Projection (one rank per host)\n")
    print(f"alpha = {network.alpha * 1e6:.1f} us ({name}) + {project.HOP_ALPHA * 1e6:.0f} us "
          "per datacentre hop; beta from the line rate at 94% TCP goodput. A cell is kolo's pick "
          "and its time; where another algorithm is more than 5% faster, that one's; where kolo "
          "picked differently before (session 22's limits, no Bruck), what that took.")
    for rate in project.RATES_GBIT:
        link = model.link_for_network(rate, network.alpha + project.HOP_ALPHA, 0.0)
        for collective, sizes in (("broadcast", BROADCAST_SIZES),
                                  ("allgather", ALLGATHER_SIZES)):
            label = "buffer" if collective == "broadcast" else "whole output"
            print(f"\n### {rate} Gb/s {collective} (size = the {label})\n")
            print("| ranks | " + " | ".join(project.fmt_bytes(n) for n in sizes) + " |")
            print("|---" * (len(sizes) + 1) + "|")
            for p in plot.PLOT_RANKS:  # non-powers of two too: Bruck's
                cells = [projection_cell(collective, p, n, link)[0] for n in sizes]
                print(f"| {p} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = measurement_parser(__doc__, "scaling_collectives.png")
    parser.add_argument("--alpha-us", type=float,
                        help="project with this per-step alpha of the emulated link instead of "
                             "the fit's (e.g. a fit from a quieter run)")
    args = parser.parse_args()
    cases = measure_or_replay(args, local_cases, veth_cases, environment)
    links, qualities = {}, {}
    for transport in ("tcp", "shm", "veth"):
        if any(case.transport == transport for case in cases):
            links[transport], qualities[transport] = fit_transport(cases, transport)
    print_fits(links, qualities)
    print_check(cases, links)
    name = "veth" if "veth" in links else "tcp"
    network = links[name]
    label = f"{name} fit"
    if args.alpha_us is not None:
        network = model.Link(args.alpha_us * 1e-6, network.beta, network.gamma)
        label = f"--alpha-us, instead of the {name} fit's {links[name].alpha * 1e6:.1f} us"
    print_projection(label, network)
    print("\n" + plot.collectives(args.plot, network))


if __name__ == "__main__":
    main()
