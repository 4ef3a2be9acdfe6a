"""Allgather, alltoall and reducescatter (grouped too) of the torch front end through the NCCL
path on the stand-in GPU library (tests/cpp/gpu/fakes, loaded as the process's CUDA runtime and
NCCL): the output is allocated by the front end's allocator on kolo's thread once the shape is
agreed. CPU tensors stand for CUDA tensors on device 0 (the stand-in's device memory is host
memory). Argument "outputs" (np 1): the bytes, the shapes and the calls in order for every op.
Argument "failing" (any np): the last rank's allocator raises (out of memory); every rank's
synchronize() raises, that rank with its reason, the others naming it, and no NCCL call ran for
that op; the next allgather then runs on every rank. Prints "rank <rank> OK"."""

import sys

import torch

import horovod.torch as hvd
from kolo import _core
from kolo.torch import gpu_path, nccl_submit, staging
# Loads the stand-in as the process's CUDA runtime before kolo looks for one.
from nccl_fake_gpu import FAKE, StandInCuda, log


class AllocatingStandIn(StandInCuda):
    """StandInCuda whose CUDA tensors are marked one by one with mark(), and whose allocate()
    makes host tensors (the stand-in's device memory), or raises when `fail` is set."""

    def __init__(self):
        super().__init__()
        self.allocated = []
        self.fail = False

    def mark(self, tensor):
        self.cuda.add(id(tensor))
        return tensor

    def allocate(self, shape, dtype, device):
        if self.fail:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (the stand-in's refusal)")
        output = torch.full(shape, -1, dtype=dtype)
        self.allocated.append(output)
        return output


def ordered(lines, nccl_prefix, count=1):
    """The caller's event first (on the caller's stream S1), kolo's stream waits for it and for
    the allocation's event (recorded on the allocating thread's stream, here S1 too), `count`
    NCCL calls, kolo's completion event (on kolo's stream), and at synchronize() the caller's
    stream S1 waits for that event."""
    assert lines[1].startswith("cudaEventRecord ") and lines[1].endswith(" S1"), lines
    on_s1 = [line.split()[1] for line in lines
             if line.startswith("cudaEventRecord ") and line.endswith(" S1")]
    assert len(on_s1) == 2, lines  # the caller's event, then the allocation's
    waits = [i for i, line in enumerate(lines) if line.startswith("cudaStreamWaitEvent ")
             and line.split()[-1] in on_s1]
    nccl = [i for i, line in enumerate(lines) if line.startswith(nccl_prefix)]
    done = [i for i, line in enumerate(lines)
            if line.startswith("cudaEventRecord ") and not line.endswith(" S1")]
    assert len(waits) == 2 and len(nccl) == count and len(done) == 1, (nccl_prefix, lines)
    assert waits[-1] < nccl[0] and nccl[-1] < done[0], lines
    completion = lines[done[0]].split()[1]
    assert f"cudaStreamWaitEvent S1 {completion}" in lines[done[0]:], lines


def check_outputs(calls) -> None:
    rows = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    FAKE.fake_gpu_clear_log()
    gathered = hvd.synchronize(hvd.allgather_async(calls.mark(rows), name="ag"))
    assert gathered is calls.allocated[-1] and torch.equal(gathered, rows), gathered
    ordered(log(), "ncclAllGather n=24 type=1")  # 3 x 2 float32 as bytes
    # A caller that keeps the GIL busy polling (never blocking in kolo) still lets kolo's thread
    # take it for the allocator: Python hands the GIL over every switch interval.
    handle = hvd.allgather_async(calls.mark(rows), name="ag.polled")
    while not hvd.poll(handle):
        pass
    assert torch.equal(hvd.synchronize(handle), rows)

    FAKE.fake_gpu_clear_log()
    received, splits = hvd.synchronize(hvd.alltoall_async(calls.mark(rows), splits=[3],
                                                          name="a2a"))
    assert received is calls.allocated[-1] and torch.equal(received, rows), received
    assert splits.dtype == torch.int32 and splits.tolist() == [3], splits
    lines = log()
    assert [line.split(" S")[0] for line in lines if line.startswith("nccl")] == [
        "ncclGroupStart", "ncclSend n=24 peer=0", "ncclRecv n=24 peer=0", "ncclGroupEnd"], lines
    ordered(lines, "ncclSend")

    values = torch.tensor([1.5, 2.0, -3.0, 4.0])
    FAKE.fake_gpu_clear_log()
    mine = hvd.synchronize(hvd.reducescatter_async(calls.mark(values), name="rs", op=hvd.Sum))
    assert mine is calls.allocated[-1] and torch.equal(mine, values), mine
    ordered(log(), "ncclReduceScatter n=4 type=7 op=0")  # float32, ncclSum
    FAKE.fake_gpu_clear_log()
    hvd.synchronize(hvd.reducescatter_async(calls.mark(values), name="rs.avg", op=hvd.Average))
    # ncclAvg (op 4) among several ranks; alone, ncclSum (NCCL's one-rank ncclAvg lost elements)
    ordered(log(), f"ncclReduceScatter n=4 type=7 op={4 if hvd.size() > 1 else 0}")

    # The grouped forms: one negotiated group, one NCCL call per tensor, one completion event.
    pair = [calls.mark(torch.ones(2, 3, dtype=torch.float64)),
            calls.mark(torch.arange(4, dtype=torch.int32))]
    FAKE.fake_gpu_clear_log()
    outputs = hvd.synchronize(hvd.grouped_allgather_async(pair, name="gag"))
    assert [o.data_ptr() for o in outputs] == [a.data_ptr() for a in calls.allocated[-2:]]
    assert all(torch.equal(o, t) for o, t in zip(outputs, pair)), outputs
    lines = log()
    assert [line.split(" S")[0] for line in lines if line.startswith("ncclAllGather")] == [
        "ncclAllGather n=48 type=1", "ncclAllGather n=16 type=1"], lines
    assert sum(line.startswith("cudaStreamWaitEvent S1 ") for line in lines) == 2, lines
    FAKE.fake_gpu_clear_log()
    outputs = hvd.synchronize(hvd.grouped_reducescatter_async(pair, name="grs", op=hvd.Sum))
    assert all(torch.equal(o, t) for o, t in zip(outputs, pair)), outputs
    assert [line.split(" S")[0] for line in log() if line.startswith("ncclReduceScatter")] == [
        "ncclReduceScatter n=6 type=8 op=0", "ncclReduceScatter n=4 type=2 op=0"], log()


def check_failing(calls) -> None:
    last = hvd.size() - 1
    calls.fail = hvd.rank() == last
    FAKE.fake_gpu_clear_log()
    tensor = calls.mark(torch.ones(hvd.rank() + 1, 2))
    try:
        hvd.synchronize(hvd.allgather_async(tensor, name="oom"))
    except Exception as error:  # HorovodInternalError on every rank
        message = str(error)
    else:
        raise AssertionError(f"rank {hvd.rank()}: the allgather did not fail")
    if hvd.rank() == last:
        assert f"rank {last}: allgather of CUDA tensor 'allgather.oom'" in message, message
        assert "failed: OutOfMemoryError: CUDA out of memory (the stand-in's refusal)" in message, \
            message
        assert "Traceback" not in message, message
    else:
        assert f"rank {last} could not allocate its output" in message, message
    assert not any(line.startswith("nccl") and "Comm" not in line and "GetUniqueId" not in line
                   for line in log()), log()  # nobody entered a collective
    calls.fail = False
    FAKE.fake_gpu_clear_log()
    gathered = hvd.synchronize(hvd.allgather_async(tensor, name="after"))
    total = sum(r + 1 for r in range(hvd.size()))
    assert gathered.shape == (total, 2), gathered.shape
    assert any(line.startswith(("ncclAllGather", "ncclBroadcast")) for line in log()), log()


def main(mode: str) -> None:
    hvd.init()
    assert _core.nccl_status()["loaded"] and _core.cuda_status()["loaded"]
    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    staging.FORCED = True  # host tensors standing for CUDA ones reach the device branch
    calls = AllocatingStandIn()
    nccl_submit.use_calls(calls)
    {"outputs": check_outputs, "failing": check_failing}[mode](calls)
    print(f"rank {hvd.rank()} OK", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
