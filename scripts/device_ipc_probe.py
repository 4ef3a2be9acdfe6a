"""Could ranks that share one GPU reduce on it, through CUDA IPC, instead of through host memory?
A probe for a lent GPU (scripts/device_check.sh, diag step), not part of kolo:

    kolorun -np 2 python3 scripts/device_ipc_probe.py

Every rank shares a device buffer ("mailbox") and two interprocess events with the others once
(torch's own IPC pickling, sent with allgather_object), then, per round: writes its values into
its mailbox and records "ready"; the ranks meet on the CPU (a small allreduce: the handshake a
kolo op's negotiation would be); each rank's stream waits for every peer's "ready", sums every
mailbox into its result on the GPU and records "done"; the ranks meet again and each waits for
its peers' "done" before it may write its mailbox again. Checks every result and prints, on rank
0, the medians per round (the whole round and the GPU's sum alone) for 1 MiB and 100 MiB, beside
the same sum in one process, so the cost of two CUDA contexts taking turns on the GPU shows.
Needs CUDA; every rank on the same GPU (device 0)."""

import statistics
import time

import torch
from torch.multiprocessing.reductions import reduce_tensor

import horovod.torch as hvd

ROUNDS = 20


def share(mailbox: torch.Tensor, ready: torch.cuda.Event, done: torch.cuda.Event):
    """Every rank's mailbox and events, opened in this process (its own as they are)."""
    rebuild, args = reduce_tensor(mailbox)
    mine = (args, ready.ipc_handle(), done.ipc_handle())
    everyone = hvd.allgather_object(mine, name=f"ipc_probe.share.{mailbox.numel()}")
    device = torch.device("cuda", torch.cuda.current_device())
    mailboxes, readies, dones = [], [], []
    for rank, (tensor_args, ready_handle, done_handle) in enumerate(everyone):
        if rank == hvd.rank():
            mailboxes.append(mailbox)
            readies.append(ready)
            dones.append(done)
        else:
            mailboxes.append(rebuild(*tensor_args))
            readies.append(torch.cuda.Event.from_ipc_handle(device, ready_handle))
            dones.append(torch.cuda.Event.from_ipc_handle(device, done_handle))
    return mailboxes, readies, dones


def handshake(name: str) -> None:
    hvd.allreduce(torch.zeros(1), name=name)


def probe(elements: int) -> tuple[float, float]:
    """Median ms per round (wall) and of the GPU's sum, over ROUNDS checked rounds."""
    rank, size = hvd.rank(), hvd.size()
    mailbox = torch.zeros(elements, device="cuda")
    result = torch.empty_like(mailbox)
    ready = torch.cuda.Event(interprocess=True)
    done = torch.cuda.Event(interprocess=True)
    stream = torch.cuda.current_stream()
    ready.record(stream)
    done.record(stream)
    torch.cuda.synchronize()
    mailboxes, readies, dones = share(mailbox, ready, done)
    walls, sums = [], []
    for k in range(ROUNDS):
        start = time.perf_counter()
        mailbox.fill_(float(rank + 1 + k))
        ready.record(stream)
        handshake(f"ipc_probe.ready.{elements}.{k}")
        for peer in range(size):
            if peer != rank:
                stream.wait_event(readies[peer])
        began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began.record(stream)
        torch.add(mailboxes[0], mailboxes[1], out=result)
        for other in mailboxes[2:]:
            result.add_(other)
        ended.record(stream)
        done.record(stream)
        handshake(f"ipc_probe.done.{elements}.{k}")
        for peer in range(size):
            if peer != rank:
                stream.wait_event(dones[peer])
        stream.synchronize()
        walls.append((time.perf_counter() - start) * 1e3)
        sums.append(began.elapsed_time(ended))
        expected = float(sum(r + 1 + k for r in range(size)))
        first, last = result[0].item(), result[-1].item()
        assert first == last == expected, (rank, k, first, last, expected)
    handshake(f"ipc_probe.end.{elements}")  # no rank frees its mailbox while a peer reads it
    return statistics.median(walls[2:]), statistics.median(sums[2:])


def alone(elements: int) -> float:
    """The same sum of `size` buffers in this process alone, median ms (CUDA events)."""
    buffers = [torch.ones(elements, device="cuda") for _ in range(hvd.size())]
    result = torch.empty_like(buffers[0])
    times = []
    for _ in range(ROUNDS):
        began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began.record()
        torch.add(buffers[0], buffers[1], out=result)
        for other in buffers[2:]:
            result.add_(other)
        ended.record()
        ended.synchronize()
        times.append(began.elapsed_time(ended))
    return statistics.median(times[2:])


def host_link(elements: int) -> tuple[float, float]:
    """Median ms of one copy of `elements` float32 to pinned host memory and back, in this
    process alone: what the asynchronous host path moves twice per tensor instead."""
    device = torch.ones(elements, device="cuda")
    host = torch.empty(elements, pin_memory=True)
    results = []
    for source, destination in ((device, host), (host, device)):
        times = []
        for _ in range(ROUNDS // 2):
            began = torch.cuda.Event(enable_timing=True)
            ended = torch.cuda.Event(enable_timing=True)
            began.record()
            destination.copy_(source, non_blocking=True)
            ended.record()
            ended.synchronize()
            times.append(began.elapsed_time(ended))
        results.append(statistics.median(times[1:]))
    return results[0], results[1]


def main() -> None:
    hvd.init()
    torch.cuda.set_device(0)
    lines = []
    for elements in (1 << 18, 25 << 20):  # 1 MiB and 100 MiB of float32
        wall, gpu_sum = probe(elements)
        single = alone(elements) if hvd.rank() == 0 else 0.0
        lines.append(f"ipc probe np {hvd.size()}, {elements * 4 >> 20} MiB: round {wall:.3f} ms "
                     f"(two CPU handshakes included), GPU sum {gpu_sum:.3f} ms; the same sum "
                     f"in one process {single:.3f} ms; results right")
    if hvd.rank() == 0:
        to_host, to_device = host_link(25 << 20)
        lines.append(f"host link, 100 MiB in one process: to pinned host memory {to_host:.3f} ms, "
                     f"back {to_device:.3f} ms")
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
