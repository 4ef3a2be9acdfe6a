"""Step counts of kolo's broadcast and allgather, and of the algorithms it lacks, for the same
alpha-beta model as allreduce's (model.py): T = a * alpha + b * n * beta, no reduction term.

n is what kolo-bench's size column means: the broadcast buffer, and the allgather's whole output
(p blocks of n/p), as in nccl-tests. Read from src/comm/broadcast*.cc and allgatherv.cc. Pure
Python, no timing: tests/python/test_scaling_collectives.py checks it.
"""

from __future__ import annotations

import math

# broadcast_tree forwards in segments of this size, broadcast_chain in chunks of it
# (kBroadcastChunkBytes); the tree's root sends whole.
TREE_SEGMENT_BYTES = 512 * 1024
CHAIN_CHUNK_BYTES = TREE_SEGMENT_BYTES


def _depth(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def broadcast_tree(p: int, n: float) -> tuple[float, float, float]:
    """kolo's binomial tree. The root sends the whole buffer to each of its ceil(log2 p) children
    at once, so its one link carries depth * n; every other rank forwards segment k while
    segment k + 1 arrives, so after the root's last byte only the last segment still descends
    depth - 1 levels. One step's latency per level."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    depth = _depth(p)
    tail = (depth - 1) * min(n, TREE_SEGMENT_BYTES) / n if n else 0.0
    return (float(depth), depth + tail, 0.0)


def broadcast_chain(p: int, n: float) -> tuple[float, float, float]:
    """kolo's broadcast_chain (NCCL's ring broadcast): chunks stream rank to rank in order. The
    first chunk reaches the end after p - 1 hops (a latency each); after that the chunks arrive
    back to back, their latencies hidden behind the transfers, so p - 2 + chunks chunk-times of
    bytes: every link carries n once plus the fill."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    chunks = max(1, math.ceil(n / CHAIN_CHUNK_BYTES))
    return (float(p - 1), (p - 2 + chunks) / chunks, 0.0)


# src/comm/broadcast_choice.cc: alpha + one chunk's transfer counted as this many bytes.
CHAIN_STEP_WORTH_BYTES = 1 << 20
# src/comm/broadcast_choice.cc: scatter + allgather from 8 ranks, a step counted as 128 KiB.
SCATTER_ALLGATHER_FROM_RANKS = 8
SCATTER_ALLGATHER_STEP_WORTH_BYTES = 128 * 1024


def broadcast_chain_limit(p: int) -> float:
    """broadcast_chain_limit(): never on 2 ranks; below 8 ranks (no scatter + allgather), from
    (p - 2) MiB over the depth - 1 tree levels it saves; from 8 ranks, from p - 1 chunks, where
    it overtakes scatter + allgather (n (p-2)/p bytes saved against p - 2 chunks of fill)."""
    if p < 3:
        return math.inf
    if p >= SCATTER_ALLGATHER_FROM_RANKS:
        return float((p - 1) * CHAIN_CHUNK_BYTES)
    saved = _depth(p) - 1
    return float(-(-((p - 2) * CHAIN_STEP_WORTH_BYTES) // saved))  # rounded up


def broadcast_scatter_allgather_limit(p: int) -> float:
    """broadcast_scatter_allgather_limit(): where its p - 1 extra steps cost less than the bytes
    it saves against the tree (broadcast_tree() above: (2 depth - 1) n below one segment,
    depth n + (depth - 1) segments above); from 8 ranks."""
    if p < SCATTER_ALLGATHER_FROM_RANKS:
        return math.inf
    depth = _depth(p)
    spread = 2.0 * (p - 1) / p
    extra_steps = (p - 1) * SCATTER_ALLGATHER_STEP_WORTH_BYTES
    below_segment = extra_steps / (2 * depth - 1 - spread)
    if below_segment <= TREE_SEGMENT_BYTES:
        return float(math.ceil(below_segment))
    return float(math.ceil((extra_steps - (depth - 1) * TREE_SEGMENT_BYTES) / (depth - spread)))


def kolo_broadcast_pick(p: int, n: float) -> str:
    """broadcast() between hosts (no arena): the chain from its limit, scatter + allgather from
    its own, else the tree."""
    if n >= broadcast_chain_limit(p):
        return "chain"
    return "scatter_allgather" if n >= broadcast_scatter_allgather_limit(p) else "tree"


def broadcast_scatter_allgather(p: int, n: float) -> tuple[float, float, float]:
    """kolo's broadcast_scatter_allgather (van de Geijn's, MPICH's for large buffers): a binomial
    scatter of p blocks, then a ring allgather of them. Each rank's link carries about
    2n (p-1)/p."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    return (float(_depth(p) + p - 1), 2.0 * (p - 1) / p, 0.0)


def allgather_ring(p: int, n: float) -> tuple[float, float, float]:
    """kolo's allgatherv_ring: p - 1 rounds, each passing one block (n/p) to the right."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    return (float(p - 1), (p - 1) / p, 0.0)


def allgather_doubling(p: int, n: float) -> tuple[float, float, float]:
    """kolo's allgatherv_doubling: log2 P rounds among the largest power of two P <= p that double
    what each rank holds; the p - P extra ranks first hand their block over (one step of n/p)
    and get the whole output back at the end (one step of n)."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    rounds = _depth(p + 1) - 1  # log2 P
    big = 1 << rounds
    if big == p:
        return (float(rounds), (p - 1) / p, 0.0)
    return (float(rounds + 2), 1.0 / p + (big - 1) / big + 1.0, 0.0)


def allgather_bruck(p: int, n: float) -> tuple[float, float, float]:
    """kolo's allgatherv_bruck (MPICH's small-message allgather for any p): ceil(log2 p) rounds,
    the ring's bytes; blocks land in place (a wrapped run is two transfers in one step), so no
    rotation at the end."""
    if p == 1:
        return (0.0, 0.0, 0.0)
    return (float(_depth(p)), (p - 1) / p, 0.0)


# src/comm/allgather_choice.h
ALLGATHER_DOUBLING_MAX_BYTES = 512 * 1024


def allgather_doubling_serves(p: int, total: float) -> bool:
    """allgather_doubling_serves(): powers of two from 4 ranks, up to 512 KiB."""
    return total <= ALLGATHER_DOUBLING_MAX_BYTES and p & (p - 1) == 0 and p >= 4


def allgather_bruck_serves(p: int, total: float) -> bool:
    """allgather_bruck_serves(): other sizes from 5 ranks, up to 512 KiB."""
    return total <= ALLGATHER_DOUBLING_MAX_BYTES and p & (p - 1) != 0 and p >= 5


BROADCAST = {"tree": broadcast_tree, "scatter_allgather": broadcast_scatter_allgather,
             "chain": broadcast_chain}
ALLGATHER = {"ring": allgather_ring, "doubling": allgather_doubling, "bruck": allgather_bruck}
ALGORITHMS = {"broadcast": BROADCAST, "allgather": ALLGATHER}


def kolo_pick(collective: str, p: int, n: float) -> str:
    """What kolo runs between hosts (one rank per host, so the arena never serves)."""
    if collective == "broadcast":
        return kolo_broadcast_pick(p, n)
    if allgather_doubling_serves(p, n):
        return "doubling"
    return "bruck" if allgather_bruck_serves(p, n) else "ring"
