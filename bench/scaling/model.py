"""The alpha-beta(-gamma) cost model of kolo's allreduce algorithms, and of the ones it lacks.

An algorithm's time for n bytes on p ranks is
    T = a(p, n) * alpha + b(p, n) * n * beta + c(p, n) * n * gamma
alpha: the cost of one step (a message's latency plus a round's software overhead), beta: seconds
per byte on the busiest link, gamma: seconds per byte of reduction arithmetic. a, b, c are the
algorithm's own step counts, read from src/comm/allreduce_*.cc (see each function below). Pure
Python and numpy, no timing: tests/python/test_scaling_model.py checks it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass(frozen=True)
class Link:
    """One transport's fitted costs, in seconds (alpha) and seconds per byte (beta, gamma)."""

    alpha: float
    beta: float
    gamma: float

    def time(self, steps: tuple[float, float, float], n: float) -> float:
        a, b, c = steps
        return a * self.alpha + b * n * self.beta + c * n * self.gamma


def _log2_floor(p: int) -> int:
    return p.bit_length() - 1


def ring(p: int, n: float = 0) -> tuple[float, float, float]:
    """allreduce_ring: reduce-scatter then allgather, 2(p-1) rounds of n/p bytes each; each rank
    folds (p-1) chunks of n/p."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    return (2.0 * (p - 1), 2.0 * (p - 1) / p, (p - 1) / p)


def recursive_doubling(p: int, n: float = 0) -> tuple[float, float, float]:
    """allreduce_recursive_doubling: log2(P) whole-buffer swaps and folds among the largest power
    of two P <= p; the p - P extra ranks first hand their buffer over (one step and one fold) and
    get the result back at the end (one more step)."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    rounds = _log2_floor(p)
    extra = p - (1 << rounds)
    a = rounds + (2 if extra else 0)
    return (float(a), float(a), float(rounds + (1 if extra else 0)))


# allreduce_shared_memory folds pieces up to this size whole on every rank (kFoldWholeBytes).
SHM_FOLD_WHOLE_BYTES = 16 * 1024


def shared_memory(p: int, n: float = 0) -> tuple[float, float, float]:
    """allreduce_shared_memory, per piece: small pieces are copied into the rank's slot, one
    barrier, every rank folds all p slots (p-1 folds of n); larger ones: copy all but the own
    slice in, barrier, fold one slice of every other slot, publish it, second barrier, copy the
    other slices out. beta here is the arena's copy cost per byte, alpha one barrier."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    if n <= SHM_FOLD_WHOLE_BYTES:
        return (1.0, 1.0, float(p - 1))
    return (2.0, 2.0 * (p - 1) / p + 1.0 / p, (p - 1) / p)


def halving_doubling(p: int, n: float = 0) -> tuple[float, float, float]:
    """allreduce_halving_doubling (Rabenseifner's recursive halving reduce-scatter + recursive
    doubling allgather, MPICH's large-message allreduce): 2 log2 P steps, the ring's bandwidth
    among the largest power of two P <= p. The p - P extra ranks fold in first and get the
    result back as in recursive doubling (two steps, two whole transfers, one whole fold)."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    rounds = _log2_floor(p)
    big = 1 << rounds
    extra = p - big
    a = 2 * rounds + (2 if extra else 0)
    b = 2.0 * (big - 1) / big + (2.0 if extra else 0.0)
    c = (big - 1) / big + (1.0 if extra else 0.0)
    return (float(a), b, c)


def tree(p: int, n: float = 0) -> tuple[float, float, float]:
    """A pipelined double binary tree (NCCL's tree allreduce; kolo lacks it): a reduce up and a
    broadcast down a tree of depth ceil(log2 p), the buffer cut into chunks that stream through,
    so latency 2 ceil(log2 p) steps and bandwidth ~2n per link (each rank receives n from its
    children on the way up and sends n on the way down). Pipeline fill is ignored."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    depth = math.ceil(math.log2(p))
    return (2.0 * depth, 2.0, 1.0)


def torus_shape(p: int) -> tuple[int, int]:
    """The most square r x c = p (r <= c) for a 2-D ring; a prime p gives 1 x p (a plain ring)."""
    r = int(math.isqrt(p))
    while p % r:
        r -= 1
    return r, p // r


def ring_2d(p: int, n: float = 0) -> tuple[float, float, float]:
    """2-D ring on an r x c grid (kolo lacks it): reduce-scatter along rows, ring allreduce of the
    1/c slice down the columns, allgather along rows. Same bytes as a ring, 2(r+c-2) steps
    instead of 2(p-1)."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    r, c = torus_shape(p)
    return (2.0 * (r + c - 2), 2.0 * (p - 1) / p, (p - 1) / p)


FLAT = {
    "ring": ring,
    "recursive_doubling": recursive_doubling,
    "halving_doubling": halving_doubling,
    "tree": tree,
    "ring_2d": ring_2d,
}
KOLO_HAS = {"ring", "recursive_doubling", "halving_doubling", "shared_memory", "hierarchical"}


def flat_time(algorithm: str, p: int, n: float, link: Link) -> float:
    return link.time(FLAT[algorithm](p, n), n)


# kolo's automatic choice (src/comm/allreduce.cc), with its defaults.
SMALL_MESSAGE_BYTES = 64 * 1024


TUNED_RANKS = 4


def _steps_per_byte_saved(p: int, other=recursive_doubling) -> float:
    """The ring's extra steps over `other`'s per extra byte (transfer + fold) `other` pays."""
    ring_steps, ring_bytes, ring_folds = ring(p)
    other_steps, other_bytes, other_folds = other(p)
    return (ring_steps - other_steps) / (other_bytes + other_folds - ring_bytes - ring_folds)


def _scaled(small_message_bytes: int, steps_per_byte: float) -> int:
    scale = max(1.0, steps_per_byte / _steps_per_byte_saved(TUNED_RANKS))
    return round(small_message_bytes * scale)


def recursive_doubling_limit(small_message_bytes: int, p: int) -> int:
    """src/comm/allreduce_choice.cc: the configured limit up to 4 ranks, scaled beyond by the
    ratio of the ring's extra steps to recursive doubling's extra bytes, never below it."""
    if p <= TUNED_RANKS:
        return small_message_bytes
    return _scaled(small_message_bytes, _steps_per_byte_saved(p))


HALVING_DOUBLING_MIN_RANKS = 8  # kHalvingDoublingMinRanks


def halving_doubling_limit(small_message_bytes: int, p: int) -> float:
    """src/comm/allreduce_choice.cc: halving-doubling from the recursive-doubling limit up to this
    many bytes: none below 8 ranks, every size on a power of two (the ring's bytes in fewer
    steps), else the configured limit scaled by the steps it saves per extra byte its extra
    ranks' fold-in and hand-back cost."""
    if p < HALVING_DOUBLING_MIN_RANKS:
        return 0
    if p & (p - 1) == 0:
        return math.inf
    return _scaled(small_message_bytes, _steps_per_byte_saved(p, halving_doubling))


def kolo_flat_pick(p: int, n: float, element: int = 4,
                   small_message_bytes: int = SMALL_MESSAGE_BYTES, scaled: bool = True,
                   halving: bool = True) -> str:
    """What allreduce() runs on a group of p ranks with no arena and no hierarchy (scaled=False:
    a fixed recursive-doubling limit, as before the scaling branch; halving=False: no
    halving-doubling, as before this one)."""
    limit = recursive_doubling_limit(small_message_bytes, p) if scaled else small_message_bytes
    if n < limit or n / element < p:
        return "recursive_doubling"
    if halving and n < halving_doubling_limit(small_message_bytes, p):
        return "halving_doubling"
    return "ring"


def kolo_pick(p: int, hosts: int, n: float, element: int = 4, oversubscribed: bool = False,
              small_message_bytes: int = SMALL_MESSAGE_BYTES) -> str:
    """allreduce()'s automatic choice for p ranks over `hosts` hosts: one host -> the arena
    (below small_message_bytes only when the host has more ranks than CPUs); several hosts with
    more ranks than hosts -> hierarchical; else the flat size rule."""
    if hosts == 1 and p > 1 and (not oversubscribed or n < small_message_bytes):
        return "shared_memory"
    if 1 < hosts < p:
        return "hierarchical"
    return kolo_flat_pick(p, n, element, small_message_bytes)


def hierarchical_time(p: int, per_host: int, n: float, net: Link, local: Link,
                      element: int = 4) -> float:
    """allreduce_hierarchical with even hosts: reduce-scatter inside the host (a ring over the
    local links: (L-1) steps of n/L), then local rank i of every host allreduces slice i (n/L
    bytes, H = p/L ranks, picked by kolo's flat rule), all L slices at once through the host's
    one network link (so that link carries L times the slice's bytes), then allgather inside the
    host."""
    hosts = p // per_host
    slice_bytes = n / per_host
    stage = (per_host - 1) / per_host
    inside = 2 * ((per_host - 1) * local.alpha + stage * n * local.beta) + stage * n * local.gamma
    pick = kolo_flat_pick(hosts, slice_bytes, element)
    a, b, c = FLAT[pick](hosts, slice_bytes)
    across = a * net.alpha + b * slice_bytes * per_host * net.beta + c * slice_bytes * net.gamma
    return inside + across


SMALL_MAX_BYTES = 2048  # alpha from these sizes: latency-bound
LARGE_MIN_BYTES = 256 * 1024  # beta and gamma from these: bandwidth-bound


def _nonnegative_least_squares(rows: np.ndarray, target: np.ndarray) -> np.ndarray:
    """min |rows x - target| with x >= 0, by trying every subset of columns (few unknowns)."""
    best, best_cost = np.zeros(rows.shape[1]), float(np.sum(target**2))
    for size in range(rows.shape[1], 0, -1):
        for chosen in combinations(range(rows.shape[1]), size):
            columns = list(chosen)
            solution, *_ = np.linalg.lstsq(rows[:, columns], target, rcond=None)
            if np.any(solution < 0):
                continue
            params = np.zeros(rows.shape[1])
            params[columns] = solution
            cost = float(np.sum((rows @ params - target) ** 2))
            if cost < best_cost:
                best, best_cost = params, cost
    return best


def fit(samples: list[tuple[tuple[float, float, float], float, float]]) -> tuple[Link, dict]:
    """alpha, beta, gamma >= 0 from samples (steps, n, seconds), Hockney's way: alpha from the
    latency-bound sizes (<= 2 KiB: the median of (t - bandwidth terms) / steps, robust to the
    wake-up spikes of a shared machine), beta and gamma from the bandwidth-bound ones (>= 256 KiB:
    least squares on relative error of t - steps * alpha), alternating until they settle. The
    middle sizes, where real links switch protocols and buffers, only enter the quality: the
    median and the worst of predicted/measured - 1 over every sample."""
    small = [(a, b * n, c * n, t) for (a, b, c), n, t in samples if n <= SMALL_MAX_BYTES and a]
    large = [(a, b * n, c * n, t) for (a, b, c), n, t in samples if n >= LARGE_MIN_BYTES]
    alpha, beta, gamma = 0.0, 0.0, 0.0
    for _ in range(50):
        if small:
            alpha = max(0.0, float(np.median([(t - bn * beta - cn * gamma) / a
                                              for a, bn, cn, t in small])))
        if large:
            rows = np.array([[bn / t, cn / t] for _, bn, cn, t in large])
            target = np.array([1 - a * alpha / t for a, _, _, t in large])
            beta, gamma = (float(x) for x in _nonnegative_least_squares(rows, target))
    link = Link(alpha, beta, gamma)
    ratios = np.array([link.time(steps, n) / t for steps, n, t in samples])
    quality = {"median_error": float(np.median(np.abs(ratios - 1))),
               "worst_ratio": float(ratios[np.argmax(np.abs(ratios - 1))]),
               "samples": len(samples)}
    return link, quality


def link_for_network(gbit_per_s: float, alpha: float, gamma: float,
                     goodput: float = 0.94) -> Link:
    """A network hop of `gbit_per_s` line rate: beta from the rate times TCP/IP's goodput over
    1500-byte frames (~94%), alpha and gamma as given."""
    return Link(alpha=alpha, beta=8.0 / (gbit_per_s * 1e9 * goodput), gamma=gamma)


def uneven_hierarchical_time(per_host: list[int], n: float, net: Link, arena: Link,
                             local: Link, element: int = 4) -> float:
    """allreduce_hierarchical with uneven hosts: allreduce inside each host (the arena), then
    among one leader per host (kolo's flat rule), then a broadcast inside each host (one copy
    through the local link); the slowest host decides."""
    leaders = len(per_host)
    pick = kolo_flat_pick(leaders, n, element)
    across = net.time(FLAT[pick](leaders, n), n)
    worst = 0.0
    for ranks in per_host:
        inside = arena.time(shared_memory(ranks, n), n) if ranks > 1 else 0.0
        spread = local.alpha + n * local.beta if ranks > 1 else 0.0
        worst = max(worst, inside + spread)
    return worst + across
