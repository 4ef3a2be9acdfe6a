"""Where the ranks compare their GPUs (kolo/torch/staging.py), without a GPU: the process is told
it has CUDA (staging._cuda_present), which GPU each rank chose (staging._own_gpu, counted: one
call per exchange) and which tensor passes for a CUDA one (nccl_submit's calls). Every rank
reports the same GPU, so the CUDA tensor takes the async host path, where a CPU tensor standing
for it is reduced as itself.

argv[1]:
- "first-op": two sessions (shutdown and init between them, as Horovod's test_torch.py tearDown
  does) that each begin as Horovod's test_horovod_allreduce_cpu_gpu_error: rank 0's first
  operation is the CUDA tensor's allreduce, every other rank's a CPU tensor's. The ranks must
  exchange once per session, before either operation, and neither may wait for the other.
- "unchosen": rank 1 has no GPU chosen at its first operation (a CPU allreduce before
  torch.cuda.set_device); at the first CUDA tensor, which every rank then submits, the ranks
  exchange once more and the table is complete.
- "process-set": two sessions whose first operation on every rank is a CUDA tensor's allreduce on
  a process set of that rank alone (Horovod's test_horovod_allgather_grad_process_sets hung so
  on the H200, session 39: choosing the CUDA tensor's path exchanged on the global set, whose
  first operation ran the exchange's hook again, inside the exchange, on a lock it held).
- "path-first": the path asked for before any operation (kolo's own shared-GPU test worker did,
  and hung the same way).
Prints "rank <rank> exchanged <n> times", then "rank <rank> OK"."""

import os
import sys

import torch

import horovod.torch as hvd
import kolo
from kolo.torch import gpu_path, handles, nccl_submit, staging


class StandInCuda(nccl_submit.CudaCalls):
    """The tensors in `cuda` pass for CUDA tensors on device 0."""

    def __init__(self):
        self.cuda = set()

    def is_cuda(self, tensor):
        return id(tensor) in self.cuda

    def device_index(self, tensor):
        return 0


calls = StandInCuda()
exchanges = []  # one entry per call of _own_gpu: one per exchange on this rank


def own_gpu(scenario: str):
    def row():
        exchanges.append(kolo.rank())
        chosen = not (scenario == "unchosen" and kolo.rank() == 1 and len(exchanges) == 1)
        return "host-a", "GPU-shared" if chosen else "", True
    return row


def cuda_standin(values: torch.Tensor) -> torch.Tensor:
    calls.cuda.add(id(values))
    return values


def allreduce(values: torch.Tensor, name: str) -> torch.Tensor:
    return hvd.allreduce(values, op=hvd.Sum, name=name)


def check_table() -> None:
    rows = staging._gpu_table["rows"]
    assert rows == tuple(("host-a", "GPU-shared", True) for _ in range(hvd.size())), rows
    assert staging.path_for("cuda", kolo._core.OP_ALLREDUCE) == gpu_path.ASYNC_HOST


def first_op(session: int) -> None:
    size = hvd.size()
    expected = torch.full((4,), float(size))
    values = torch.ones(4)
    if hvd.rank() == 0:
        values = cuda_standin(values)
    got = allreduce(values, f"first.{session}")
    assert torch.equal(got, expected), got
    check_table()
    assert len(exchanges) == session + 1, (session, exchanges)


def unchosen() -> None:
    size = hvd.size()
    assert torch.equal(allreduce(torch.ones(2), "before_set_device"), torch.full((2,), size))
    assert len(exchanges) == 1, exchanges
    rows = staging._gpu_table["rows"]
    assert gpu_path.unchosen(rows) == [1], rows
    got = allreduce(cuda_standin(torch.ones(3)), "first_cuda")
    assert torch.equal(got, torch.full((3,), float(size))), got
    assert len(exchanges) == 2, exchanges
    check_table()


def process_set_first(session: int) -> None:
    sets = [hvd.add_process_set([rank]) for rank in range(hvd.size())]
    mine = sets[hvd.rank()]
    got = hvd.allreduce(cuda_standin(torch.full((4,), 3.0)), op=hvd.Sum, name=f"own.{session}",
                        process_set=mine)
    assert torch.equal(got, torch.full((4,), 3.0)), got
    check_table()
    assert len(exchanges) == session + 1, (session, exchanges)
    for process_set in sets:
        hvd.remove_process_set(process_set)


def main(scenario: str) -> None:
    staging._cuda_present = lambda: True
    # The GPU is shared, but the ranks do not sum on it here (shared_gpu.py has its own tests).
    staging._cuda_ipc_unavailable = lambda: "not in this test"
    staging._own_gpu = own_gpu(scenario)
    staging._warn_once = lambda text: None
    nccl_submit.use_calls(calls)
    pointers = handles._submit_pointers
    # The stand-in CUDA tensors must not take the host pointer path, which asks no path.
    handles._submit_pointers = lambda op, kind, tensor, *rest, **kw: (
        None if calls.is_cuda(tensor) else pointers(op, kind, tensor, *rest, **kw))
    if scenario in ("first-op", "process-set"):
        os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
        for session in range(2):
            hvd.init()
            rank = hvd.rank()
            (first_op if scenario == "first-op" else process_set_first)(session)
            hvd.barrier()
            hvd.shutdown()
    elif scenario == "path-first":
        hvd.init()
        rank = hvd.rank()
        assert staging.path_for("cuda", kolo._core.OP_ALLREDUCE) == gpu_path.ASYNC_HOST
        assert len(exchanges) == 1, exchanges
        first_op(0)  # the exchange is not repeated
    else:
        hvd.init()
        rank = hvd.rank()
        unchosen()
    print(f"rank {rank} exchanged {len(exchanges)} times", flush=True)
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
