"""HOROVOD_HIERARCHICAL_ALLREDUCE on CUDA tensors, on the stand-in GPU library (see
nccl_fake_gpu.py) with FAKE_GPU_SHARED_DIR set, so that its communicators of several ranks
really move bytes between the processes. kolorun's -H fakes the hosts. Each allreduce (one
tensor whose length leaves a remainder, a fused pair, an Average with prescale and postscale)
must equal the same allreduce of CPU tensors, and the stand-in's log must show the path: on
several hosts with several ranks on one, a communicator of the host's ranks and ncclReduceScatter
/ ncclAllGather (each host runs as many ranks) or ncclReduce / ncclBroadcast (uneven hosts),
never ncclAllReduce; with one rank per host, the flat ncclAllReduce over every rank. A
broadcast then runs on the communicator of every rank. Prints "rank <rank> OK"."""

import ctypes
import os
import sys

FAKE = ctypes.CDLL(os.environ["FAKE_GPU_LIBRARY"], mode=ctypes.RTLD_GLOBAL)
FAKE.fake_gpu_log.restype = ctypes.c_char_p

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from kolo.torch import gpu_path, handles, nccl_submit, staging  # noqa: E402

from nccl_fake_gpu import StandInCuda  # noqa: E402


def main(hosts: str) -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    # Exact in float32 whatever the order of the additions, so every path must agree bitwise.
    single = torch.arange(11, dtype=torch.float32) * (rank + 1)
    pair = [torch.arange(7, dtype=torch.float32) - rank, torch.full((5,), 3.0 * rank)]
    scaled = torch.arange(6, dtype=torch.float32) * (rank + 2)
    # The same allreduces of CPU tensors (kolo's CPU path) first: the expected results.
    expected_single = hvd.allreduce(single.clone(), op=hvd.Sum, name="cpu.single")
    expected_pair = hvd.grouped_allreduce([t.clone() for t in pair], op=hvd.Sum, name="cpu.pair")
    expected_scaled = hvd.allreduce(scaled.clone(), op=hvd.Average, prescale_factor=2.0,
                                    postscale_factor=0.5, name="cpu.scaled")
    assert torch.equal(expected_single, torch.arange(11.0) * sum(range(1, size + 1)))

    staging._choices["cuda"] = {op: gpu_path.PathChoice(gpu_path.NCCL, "NCCL")
                                for op in gpu_path.OPERATIONS}
    weights = torch.full((3,), 10.0 + rank, dtype=torch.float64)
    nccl_submit.use_calls(StandInCuda(single, *pair, scaled, weights))
    handles._submit_pointers = lambda *args, **kwargs: None  # no host pointer path for these
    FAKE.fake_gpu_clear_log()
    got_single = hvd.synchronize(hvd.allreduce_async(single, op=hvd.Sum, name="single"))
    got_pair = hvd.synchronize(hvd.grouped_allreduce_async(pair, op=hvd.Sum, name="pair"))
    got_scaled = hvd.synchronize(hvd.allreduce_async(scaled, op=hvd.Average, prescale_factor=2.0,
                                                     postscale_factor=0.5, name="scaled"))
    log = FAKE.fake_gpu_log().decode()
    assert torch.equal(got_single, expected_single), (got_single, expected_single)
    for got, want in zip(got_pair, expected_pair):
        assert torch.equal(got, want), (got, want)
    assert torch.equal(got_scaled, expected_scaled), (got_scaled, expected_scaled)

    local_size, local_rank = hvd.local_size(), hvd.local_rank()
    slots = [int(host.split(":")[1]) for host in hosts.split(",")]  # kolorun's -H
    hierarchical = 1 < len(slots) < size
    homogeneous = len(set(slots)) == 1
    host_comm = f"ncclCommInitRankConfig nranks={local_size} rank={local_rank} "
    assert f"ncclCommInitRankConfig nranks={size} rank={rank} " in log, log
    if not hierarchical:
        assert "ncclAllReduce" in log and "ncclReduceScatter" not in log, log
    elif homogeneous:
        assert host_comm in log and "ncclAllReduce" not in log, log
        # 11 elements over 2 local ranks: 5 each through ncclReduceScatter, 1 through ncclReduce.
        for call in ("ncclReduceScatter n=5 ", "ncclAllGather n=5 ", "ncclReduce n=1 ",
                     "ncclBroadcast n=1 "):
            assert call in log, (call, log)
    else:
        assert host_comm in log and "ncclAllReduce" not in log, log
        assert "ncclReduce n=11 " in log and "ncclReduceScatter" not in log, log
    FAKE.fake_gpu_clear_log()
    assert hvd.synchronize(hvd.broadcast_async_(weights, 0, name="weights")) is weights
    assert torch.equal(weights, torch.full((3,), 10.0, dtype=torch.float64)), weights
    print(f"rank {rank} path {'hierarchical' if hierarchical else 'flat'}", flush=True)
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
