"""The fitted model projected past this machine: 8..256 ranks on 25 and 100 Gb/s networks, which
allreduce algorithm kolo picks against the fastest one, and two real gradient workloads."""

from __future__ import annotations

import math

import model

RANKS = (8, 16, 32, 64, 128, 256)
RATES_GBIT = (25, 100)
SIZES = (8, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 128 << 20)
# A real hop adds what the veth fit lacks: two NICs, a top-of-rack switch, interrupt moderation.
# The veth fit's alpha already holds both kernels' TCP stacks and kolo's per-step work.
HOP_ALPHA = 5e-6
ISSUE_DELAY = 25e-6  # the issue's emulated link: 10 Gb/s and 25 us (no netem on this kernel)
PER_HOST = 8  # the hierarchical rows: 8 ranks per host share one NIC and shared memory
FUSION_BYTES = 128 << 20  # KOLO_FUSION_THRESHOLD's default (src/core/config.h), as Horovod's
WORKLOADS = (  # name, gradient bytes, bytes per element
    ("ResNet-50 fp32", 25_557_032 * 4, 4),
    ("1B fp32", 1_000_000_000 * 4, 4),
    ("1B fp16", 1_000_000_000 * 2, 2),
)
SHORT = {"ring": "ring", "recursive_doubling": "RD", "halving_doubling": "HD", "tree": "tree",
         "ring_2d": "2D", "hierarchical": "hier"}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f}us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f}ms"
    return f"{seconds:.2f}s"


def fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:g}B"


def flat_choice(p: int, n: float, link: model.Link, element: int = 4):
    """(kolo's pick, its time, the fastest algorithm, its time), one rank per host."""
    pick = model.kolo_flat_pick(p, n, element)
    times = {name: model.flat_time(name, p, n, link) for name in model.FLAT}
    best = min(times, key=times.get)
    return pick, times[pick], best, times[best]


def crossover(p: int, link: model.Link) -> float:
    """The size below which recursive doubling beats the ring (bisection on the model)."""
    low, high = 8.0, float(1 << 34)
    if model.flat_time("recursive_doubling", p, high, link) < model.flat_time("ring", p, high,
                                                                               link):
        return math.inf
    for _ in range(200):
        middle = math.sqrt(low * high)
        faster = (model.flat_time("recursive_doubling", p, middle, link)
                  < model.flat_time("ring", p, middle, link))
        low, high = (middle, high) if faster else (low, middle)
    return low


def buffers(total: float) -> list[float]:
    """The fused allreduces a gradient set becomes: full fusion buffers and the remainder."""
    full = int(total // FUSION_BYTES)
    rest = total - full * FUSION_BYTES
    return [float(FUSION_BYTES)] * full + ([rest] if rest > 0 else [])


def print_projection(name: str, network: model.Link, local: model.Link,
                     shaped_gbit: float) -> None:
    """network: the fit of the emulated hosts' link (alpha); local: shared memory's (its gamma is
    the CPU's folding speed, and its alpha and beta the hierarchical algorithm's local stages)."""
    gamma = local.gamma
    print("\n## Projection\n")
    print(f"A datacentre hop: alpha = {network.alpha * 1e6:.1f} us ({name} fit) + "
          f"{HOP_ALPHA * 1e6:.0f} us = {(network.alpha + HOP_ALPHA) * 1e6:.1f} us; beta from the "
          f"line rate at 94% TCP goodput; gamma = the shm fit's {gamma * 1e9:.3f} ns/B (this "
          "machine's folding speed, one core per rank, counted in full: no overlap with the "
          "transfer). Flat rows: one rank per host. fp16: the same folding cost per element.")

    issue = model.link_for_network(shaped_gbit, network.alpha + ISSUE_DELAY, gamma)
    print(f"\n### The issue's link ({shaped_gbit:g} Gb/s, +25 us per hop: analytic, no netem), "
          "one rank per host, kolo's pick\n")
    print("| ranks | " + " | ".join(fmt_bytes(n) for n in SIZES) + " |")
    print("|---" * (len(SIZES) + 1) + "|")
    for p in range(2, 7):
        cells = []
        for n in SIZES:
            pick, t, _, _ = flat_choice(p, n, issue)
            cells.append(f"{SHORT[pick]} {fmt_time(t)}")
        print(f"| {p} | " + " | ".join(cells) + " |")

    for rate in RATES_GBIT:
        link = model.link_for_network(rate, network.alpha + HOP_ALPHA, gamma)
        print(f"\n### {rate} Gb/s: kolo's pick (time) -> the model's fastest (time), "
              "one rank per host\n")
        print("| ranks | " + " | ".join(fmt_bytes(n) for n in SIZES)
              + " | RD beats ring below: model / kolo |")
        print("|---" * (len(SIZES) + 2) + "|")
        for p in RANKS:
            cells = []
            for n in SIZES:
                pick, t, best, tb = flat_choice(p, n, link)
                mark = "" if best == pick else f" -> {SHORT[best]} {fmt_time(tb)}"
                before = model.kolo_flat_pick(p, n, halving=False)
                if before != pick:
                    was = model.flat_time(before, p, n, link)
                    mark += f" (before: {SHORT[before]} {fmt_time(was)})"
                cells.append(f"{SHORT[pick]} {fmt_time(t)}{mark}")
            limit = model.recursive_doubling_limit(model.SMALL_MESSAGE_BYTES, p)
            print(f"| {p} | " + " | ".join(cells) +
                  f" | {fmt_bytes(crossover(p, link))} / {fmt_bytes(limit)} |")

        print(f"\n### {rate} Gb/s: gradient allreduce per step (fused in "
              f"{fmt_bytes(FUSION_BYTES)} buffers), kolo's pick / fastest flat / "
              f"hierarchical at {PER_HOST} ranks per host\n")
        print("| ranks | " + " | ".join(name for name, _, _ in WORKLOADS) + " |")
        print("|---" * (len(WORKLOADS) + 1) + "|")
        for p in RANKS:
            cells = []
            for _, total, element in WORKLOADS:
                scaled = model.Link(link.alpha, link.beta, link.gamma * 4 / element)
                local_scaled = model.Link(local.alpha, local.beta, local.gamma * 4 / element)
                kolo = sum(flat_choice(p, n, scaled, element)[1] for n in buffers(total))
                before = sum(model.flat_time(model.kolo_flat_pick(p, n, element, halving=False),
                                             p, n, scaled) for n in buffers(total))
                fastest = sum(flat_choice(p, n, scaled, element)[3] for n in buffers(total))
                hier = (sum(model.hierarchical_time(p, PER_HOST, n, scaled, local_scaled, element)
                            for n in buffers(total)) if p > PER_HOST else math.nan)
                hier_text = fmt_time(hier) if not math.isnan(hier) else "one host"
                was = f" (before: {fmt_time(before)})" if fmt_time(before) != fmt_time(kolo) else ""
                cells.append(f"{fmt_time(kolo)}{was} / {fmt_time(fastest)} / {hier_text}")
            print(f"| {p} | " + " | ".join(cells) + " |")
