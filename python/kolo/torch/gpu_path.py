"""Which path a device tensor's collective takes, decided once per process from facts that are
injected, so every rule runs (and is tested) without a GPU.

The paths:

- ``nccl``: the collective runs in NCCL on the GPU (needs kolo's NCCL backend, a loadable
  ``libnccl.so.2`` and one GPU per rank on each host: NCCL refuses two ranks on one GPU,
  "Duplicate GPU detected").
- ``async host``: CUDA tensors cross host memory without stopping the caller's thread: a
  non-blocking copy into pinned memory on kolo's stream, after an event on the caller's stream;
  kolo's thread waits for the copy's event, runs the CPU collective, and the result comes back
  with a non-blocking copy on the caller's stream (staging.py).
- ``shared GPU`` (allreduce only): every rank of the job uses one GPU, which NCCL refuses; the
  ranks sum each other's copies on that GPU through CUDA IPC (shared_gpu.py), no host copy. Not
  for elastic jobs (a reset must not depend on a dead peer's device memory) nor where the CUDA
  runtime lacks the IPC calls: those take the async host path.
- ``staging``: today's blocking copies (``.to("cpu")``), for device kinds without CUDA streams
  (xpu, mps, xla / privateuse1) and on request (``KOLO_GPU_OPERATIONS=STAGING``).

Horovod's variables are accepted: ``HOROVOD_GPU_OPERATIONS`` (every operation) and
``HOROVOD_GPU_ALLREDUCE`` / ``_ALLGATHER`` / ``_BROADCAST`` / ``_ALLTOALL`` /
``_REDUCESCATTER`` (one operation each, winning over the former). ``NCCL`` asks for NCCL (granted
when the facts allow it, else the async host path with the reason in the warning); ``MPI`` and
``GLOO`` mean host collectives (kolo's own, or MPI's with ``HOROVOD_CPU_OPERATIONS=mpi``), which
is the async host path. Any other value is a ValueError naming the variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

NCCL = "nccl"
ASYNC_HOST = "async host"
SHARED_GPU = "shared GPU"
STAGING = "staging"

OPERATIONS = ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter")
# The core's NCCL path runs every one of them (core/executor_device.cc; allgather, alltoall and
# reducescatter into outputs the front end allocates, core/executor_device_outputs.cc).

# What each variable's value asks for.
_REQUESTS = {"NCCL": NCCL, "MPI": ASYNC_HOST, "GLOO": ASYNC_HOST, "STAGING": STAGING}


@dataclass(frozen=True)
class GpuFacts:
    """What the choice depends on, gathered once (gather_facts) or written by a test."""

    device_type: str  # torch.device.type of the tensors: "cuda", "xpu", "mps", ...
    cuda_usable: bool = False  # torch can make CUDA streams and events in this process
    nccl_backend_built: bool = False  # kolo._core.NCCL_BUILT
    nccl_loaded: bool = False  # on every rank (kolo._core.nccl_status()["loaded"] on each)
    nccl_reason: str = ""  # and why not
    # (host, GPU UUID) of every rank of the job, in rank order; empty when not gathered.
    gpus: Sequence[tuple[str, str]] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    # Why this process cannot map other processes' device memory (CUDA IPC); "" when it can.
    ipc_unavailable: str = "not checked"


@dataclass(frozen=True)
class PathChoice:
    path: str  # NCCL, ASYNC_HOST or STAGING
    reason: str  # why, for the warning


def duplicate_gpus(gpus: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[int]]:
    """(host, uuid) -> the ranks sharing that GPU, for every GPU used by more than one rank."""
    ranks_by_gpu: dict[tuple[str, str], list[int]] = {}
    for rank, gpu in enumerate(gpus):
        ranks_by_gpu.setdefault(tuple(gpu), []).append(rank)
    return {gpu: ranks for gpu, ranks in ranks_by_gpu.items() if len(ranks) > 1}


def gather_gpus(mine: tuple[str, str, bool],
                allgather: Callable[[tuple[str, str, bool]], Sequence[Sequence]]
                ) -> list[tuple[str, str, bool]]:
    """(host, GPU UUID, NCCL loaded) of every rank, in rank order: this rank's `mine` (its UUID
    "" while it has not chosen a GPU) sent to every rank by `allgather` (kolo's
    allgather_object). Collective: staging.py says at which point every rank calls it."""
    return [(str(host), str(uuid), bool(nccl)) for host, uuid, nccl in allgather(mine)]


def unchosen(rows: Sequence[Sequence]) -> list[int]:
    """The ranks that had not chosen a GPU when the rows were gathered (each row's second item is
    the UUID: the gathered table, or GpuFacts.gpus)."""
    return [rank for rank, row in enumerate(rows) if not row[1]]


def _ranks_text(ranks: Sequence[int]) -> str:
    """'rank 1' or 'ranks 1, 2', for the reasons in the warning."""
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def facts_from_table(table: Sequence[tuple[str, str, bool]], rank: int, own_nccl_reason: str,
                     **local) -> GpuFacts:
    """GpuFacts from the gathered table and this rank's own facts (`local`: device_type,
    cuda_usable, nccl_backend_built, env): NCCL counts as loaded only where every rank loaded
    it, so that every rank makes the same choice; the reason is this rank's loader's where it
    is one of those that could not."""
    lacking = [r for r, (_, _, nccl) in enumerate(table) if not nccl]
    reason = ""
    if rank in lacking:
        reason = own_nccl_reason or "NCCL cannot be loaded"
    elif lacking:
        reason = f"{_ranks_text(lacking)} cannot load NCCL"
    return GpuFacts(nccl_loaded=bool(table) and not lacking, nccl_reason=reason,
                    gpus=tuple((host, uuid) for host, uuid, _ in table), **local)


def requested(env: Mapping[str, str]) -> dict[str, Optional[str]]:
    """Operation -> the path its variable asks for (None: nothing asked). KOLO_ wins over
    HOROVOD_, the per-operation variable over *_GPU_OPERATIONS."""

    def read(suffix: str) -> Optional[str]:
        for prefix in ("KOLO_", "HOROVOD_"):
            variable = prefix + suffix
            value = env.get(variable, "").strip()
            if value:
                path = _REQUESTS.get(value.upper())
                if path is None:
                    raise ValueError(f"{variable}={value!r}: kolo accepts "
                                     f"{', '.join(sorted(_REQUESTS))} (any case)")
                return path
        return None

    every = read("GPU_OPERATIONS")
    return {op: read(f"GPU_{op.upper()}") or every for op in OPERATIONS}


def _nccl_refusal(facts: GpuFacts) -> Optional[str]:
    """Why NCCL cannot run this job's CUDA collectives; None when it can."""
    if not facts.nccl_backend_built:
        return "this version of kolo has no NCCL backend yet"
    if not facts.nccl_loaded:
        return facts.nccl_reason or "NCCL cannot be loaded"
    if not facts.gpus:
        return "the ranks' GPUs were not compared"
    unsure = unchosen(facts.gpus)
    if unsure:
        return (f"{_ranks_text(unsure)} had no GPU chosen (no CUDA tensor or "
                f"torch.cuda.set_device yet) when the ranks compared their GPUs")
    shared = duplicate_gpus(facts.gpus)
    if shared:
        (host, uuid), ranks = next(iter(shared.items()))
        return (f"ranks {', '.join(map(str, ranks))} share one GPU ({uuid} on {host}); NCCL "
                f"refuses two ranks on one GPU (set torch.cuda.set_device(hvd.local_rank()) to "
                f"give each rank its own)")
    return None


def one_shared_gpu(gpus: Sequence[tuple[str, str]]) -> Optional[tuple[str, str]]:
    """The (host, UUID) every rank of the job uses, when there are several ranks and one GPU."""
    distinct = {tuple(gpu) for gpu in gpus}
    if len(gpus) > 1 and len(distinct) == 1:
        gpu = next(iter(distinct))
        return gpu if gpu[1] else None
    return None


def _elastic(facts: GpuFacts) -> bool:
    return facts.env.get("KOLO_ELASTIC") == "1"


def may_share_the_gpu(facts: GpuFacts) -> bool:
    """Whether choose() asks about CUDA IPC (facts.ipc_unavailable): every rank of a job that is
    not elastic on one GPU. Elsewhere the self-test that answers it (a device allocation, a
    synchronize and a free) need not run."""
    return bool(one_shared_gpu(facts.gpus)) and not _elastic(facts)


def _why_not_on_the_shared_gpu(facts: GpuFacts) -> str:
    """Why ranks sharing one GPU cannot sum on it (shared_gpu.py); "" when they can."""
    if _elastic(facts):
        return "an elastic job keeps its reductions off the peers' device memory"
    if facts.ipc_unavailable:
        return f"no CUDA IPC ({facts.ipc_unavailable})"
    return ""


def choose(facts: GpuFacts) -> dict[str, PathChoice]:
    """The path of each operation (OPERATIONS) for tensors of facts.device_type."""
    asked = requested(facts.env)
    if facts.device_type != "cuda" or not facts.cuda_usable:
        reason = (f"{facts.device_type} tensors are copied through host memory (only CUDA has "
                  f"the asynchronous paths)")
        return {op: PathChoice(STAGING, reason) for op in OPERATIONS}
    refusal = _nccl_refusal(facts)
    shared = one_shared_gpu(facts.gpus) if refusal is not None else None
    why_not = _why_not_on_the_shared_gpu(facts) if shared else "no single shared GPU"
    if shared and why_not:
        refusal = f"{refusal}; not summed on the shared GPU: {why_not}"
    choices = {}
    for op in OPERATIONS:
        want = asked[op]
        if want == STAGING:
            choices[op] = PathChoice(STAGING, "blocking copies through host memory, as asked")
        elif want == ASYNC_HOST:
            choices[op] = PathChoice(ASYNC_HOST, "host collectives, as asked")
        elif refusal is None:
            choices[op] = PathChoice(NCCL, "NCCL")
        elif op == "allreduce" and not why_not:
            prefix = "NCCL was asked for, but NCCL refuses two ranks on one GPU; " \
                if want == NCCL else ""
            host, uuid = shared
            choices[op] = PathChoice(SHARED_GPU, f"{prefix}every rank shares one GPU ({uuid} on "
                                                 f"{host}): the ranks sum each other's tensors "
                                                 f"on it through CUDA IPC")
        else:
            prefix = "NCCL was asked for, but " if want == NCCL else ""
            choices[op] = PathChoice(ASYNC_HOST, prefix + refusal)
    return choices


def warning_text(choices: dict[str, PathChoice], device_type: str) -> str:
    """The one warning that says which path the job's device tensors take and why."""
    by_choice: dict[PathChoice, list[str]] = {}
    for op in OPERATIONS:
        by_choice.setdefault(choices[op], []).append(op)
    parts = []
    for choice, ops in by_choice.items():
        which = "every operation" if len(ops) == len(OPERATIONS) else ", ".join(ops)
        parts.append(f"{which}: the {choice.path} path ({choice.reason})")
    return f"kolo: {device_type} tensors: " + "; ".join(parts)
