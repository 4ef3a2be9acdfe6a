"""The shared-GPU path's protocol (shared_gpu.py chooses the tensors and keeps the sessions):
allreduce among ranks that share one GPU, summed on that GPU: no byte crosses the host link.

NCCL refuses two ranks on one GPU, and the asynchronous host path (staging.py) moves every
gradient to the host and back while the ranks' CUDA contexts take turns on the GPU. Ranks that
share the GPU can instead read each other's device memory (CUDA IPC): each rank copies its tensor
into a *mailbox*, device memory it exported once and its peers mapped, and every rank sums all
the mailboxes on the GPU with torch's kernels, in rank order, so every rank gets the same bits.

One operation, on every rank:

1. **submit**: the caller's stream copies the tensor into a region of the rank's mailbox and
   records the rank's *ready* event (interprocess). Then a small CPU allreduce named like the
   operation (the *handshake*: each rank fills its own slot, so the Sum gathers them; a joined
   rank's slot stays empty) tells every rank where each rank's copy lies, its dtype and shape,
   the handles of its mailbox and events, the operation's number among the rank's shared
   allreduces on the process set, and the rank's *low mark*: every one of its operations
   numbered below it has been summed. A peer maps what it has not mapped yet. The negotiation
   matches names as for any operation.
2. **synchronize**: checks that the ranks agree (dtype, shape, reduction: KoloError naming the
   ranks otherwise), waits on the CPU until every peer's ready event has fired, makes the caller's
   current stream wait for its own copy, sums every rank's region into the result on that stream
   and records the rank's *done* event.
3. A mailbox is written again only once no rank reads it: this rank summed every operation
   placed in it, each peer's low mark (from a later handshake) passed that peer's number for
   each of them, and every peer's done event has fired (their sums ran). Until then a new
   mailbox is exported; in training, a step reuses the mailboxes of the step before the last.

A grouped allreduce is one operation: its members back to back in one region, one copy launch,
one ready event, one handshake whose slot names the group's size and a digest of its dtypes and
shapes (shared_gpu_handshake.py); DistributedOptimizer groups its gradients here by default
(gradient_buckets.py).

Peers' events are only ever queried from the CPU, never waited for on a stream: a peer that dies
before its copy ran leaves this rank's stream free, and the wait ends after the peer timeout with
KoloError naming the rank. The caller's thread waits at synchronize() only until the peers'
copies ran (on a shared GPU their kernels and this rank's take turns anyway); submit never waits.

``KOLO_STAGE_THROUGH_HOST=shared`` plays the whole protocol on host memory (HostSharing: mailboxes
in /dev/shm, events that have always fired), so every step runs without a GPU in the tests.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any, Optional

import numpy
import torch

import kolo
from kolo import _core, _handles
from kolo.exceptions import KoloError, KoloValueError
from kolo.torch import shared_gpu_handshake as handshake
from kolo.torch.shared_gpu_calls import first_unfired
from kolo.torch.shared_gpu_records import Mailbox, Marks, Operation, layout
from kolo.torch.shared_gpu_reduce import Sum, reduce_all

# A new mailbox holds at least this much (a training step's gradients fit in a few).
MAILBOX_BYTES = 64 << 20
# Past this much exported memory, a rank that finds no free mailbox waits up to LIMIT_WAIT_S for
# one before it exports another (a pattern that never synchronizes would otherwise grow forever).
EXPORT_LIMIT_BYTES = 1 << 30
LIMIT_WAIT_S = 5.0
_ALIGN = 256  # each region starts on a 256-byte boundary, as cudaMalloc's own blocks do



class SharedGpu:
    """One session's mailboxes, events and peers' mappings (kolo.init starts a new one)."""

    def __init__(self, calls: Any, device: int) -> None:
        self.calls = calls
        self.device = device
        self.rank = kolo.rank()
        self.ready = calls.ipc_event(device)
        self.done = calls.ipc_event(device)
        self._event_handles = calls.event_handle(self.ready) + calls.event_handle(self.done)
        self._mailboxes: list[Mailbox] = []
        self._current: Optional[Mailbox] = None
        self._peer_memory: dict[tuple[int, int], Mailbox] = {}  # (rank, number) -> its mailbox
        self._peer_pointers: list[int] = []
        self._peer_events: dict[int, tuple[Any, Any]] = {}  # rank -> (ready, done)
        self._marks: dict[int, Marks] = {}  # process set id -> this rank's marks
        self._known_low: dict[tuple[int, int], int] = {}  # (rank, set id) -> its latest low
        self._members: dict[int, list[int]] = {}  # process set id -> its ranks
        # Submitted and not yet summed, in submission order: handle -> operation.
        self._unsummed: dict[int, Operation] = {}
        self.batches = 0  # how many batches were summed (tests, benchmarks)
        self._lock = threading.Lock()
        # Held while a batch is summed: another thread synchronizing one of its operations
        # waits for the batch rather than summing it again.
        self._summing = threading.Lock()

    # -- submit ------------------------------------------------------------------------------

    def submit(self, tensors: list, outputs: list, name: str, reduction: int, set_id: int,
               group: tuple, grouped: bool) -> int:
        """One allreduce (a list of one, `grouped` False; `name` as the core's other paths name
        it) or a grouped one: the members back to back in one region, one copy launch, one
        ready event, one handshake."""
        sources = [tensor.detach() for tensor in tensors]
        sizes = [source.numel() * source.element_size() for source in sources]
        starts, nbytes = layout(sizes, _ALIGN)
        with self._lock:
            members = self._members.get(set_id)
            if members is None:
                members = self._members[set_id] = list(_core.process_set_ranks(set_id))
            if self.rank not in members:
                # Refused before anything is placed (the core's words, core/session.cc).
                raise KoloValueError(
                    f"rank {self.rank} is not a member of process set {set_id} (ranks "
                    f"{members}): tensor '{name}' cannot be submitted on it from this rank")
            mailbox, offset = self._place(nbytes, sources[0].device)
            marks = self._marks.setdefault(set_id, Marks())
            number = marks.next
            marks.next += 1
            # Placed in the same hold of the lock: another thread looking for a free mailbox
            # must not take this one meanwhile.
            mailbox.placed[(set_id, number)] = None
        calls = self.calls
        caller = calls.current_stream(sources[0].device)
        regions = [mailbox.region(offset + start, source.dtype, tuple(source.shape),
                                  source.numel()) for start, source in zip(starts, sources)]
        # On the caller's stream, after the tensors' producers: device-to-device copies, short
        # beside the kernels around them (one multi-tensor launch for a group), and no stream
        # switch or event per tensor.
        if grouped:
            calls.copy_many(regions, sources)
        else:
            calls.copy_here(regions[0], sources[0])
        calls.record(self.ready, caller)
        payload = numpy.zeros(len(members) * handshake.PAYLOAD_WORDS, numpy.int64)
        first = sources[0]
        digest = handshake.group_digest([(handshake.DTYPE_CODES[s.dtype], tuple(s.shape))
                                         for s in sources]) if grouped else 0
        handshake.pack_into(
            payload, members.index(self.rank), self.rank, mailbox.number, mailbox.size, offset,
            nbytes, first.dtype, reduction, () if grouped else tuple(first.shape),
            sum(s.numel() for s in sources), number, marks.low,
            mailbox.handle + self._event_handles, len(sources) if grouped else 0, digest)
        operation = Operation(name, tensors, outputs, reduction, set_id, number, mailbox, starts,
                              regions, len(members), payload, grouped)
        # An allreduce (a Sum of slots only their own rank fills) rather than an allgather: a
        # rank that joined (hvd.join) takes part with zeros, an empty slot, as Horovod's joined
        # ranks do in an allreduce. Marked as a CUDA tensor's host-side request (a device, no
        # event to wait for), so a rank passing a CPU tensor under the name fails every rank
        # with "Mismatched device", as on the other paths. By address, not through DLPack: this
        # runs once per gradient of every step (session 39: DLPack's import and the keyword
        # options were most of the submission's time).
        address = payload.ctypes.data
        try:
            operation.handle = _core.enqueue_pointers(
                _core.OP_ALLREDUCE, name, _core.REDUCE_SUM, 0, 1.0, 1.0, set_id, group[0],
                group[1], _core.DTYPE_INT64, [payload.size], address, address, False, -1, 0,
                self.device)
        except Exception:  # refused on this rank (a name already in flight): never submitted
            self._forget(operation)
            raise
        _handles.track(operation.handle, payload, None, _core.OP_ALLREDUCE,
                       lambda _: self._finish(operation), failed=lambda: self._forget(operation))
        with self._lock:
            self._unsummed[operation.handle] = operation
        return operation.handle

    def _place(self, nbytes: int, device: torch.device) -> tuple[Mailbox, int]:
        """A region of `nbytes` in a mailbox nobody reads any more (see the module's step 3)."""
        need = max(_ALIGN, -(-nbytes // _ALIGN) * _ALIGN)
        current = self._current
        if current is None or current.used + need > current.size:
            current = self._free_mailbox(need, device)
            if current is None and sum(m.size for m in self._mailboxes) >= EXPORT_LIMIT_BYTES:
                # Enough memory out already: the oldest mailboxes free up as the ranks' later
                # handshakes say what they summed. Bounded: then one more.
                deadline = time.monotonic() + LIMIT_WAIT_S
                while current is None and time.monotonic() < deadline:
                    self._lock.release()
                    time.sleep(1e-3)
                    self._lock.acquire()
                    current = self._free_mailbox(need, device)
            current = current or self._export(need)
            current.used = 0
            self._current = current
        offset = current.used
        current.used += need
        return current, offset

    def _free_mailbox(self, need: int, device: torch.device) -> Optional[Mailbox]:
        for mailbox in self._mailboxes:
            if mailbox.size < need or self._unread(mailbox) or not self._every_sum_ran():
                continue
            mailbox.placed.clear()
            # The next copies into it wait for this rank's own sums that read it, wherever they
            # were queued (the rank's own event: safe to wait for on a stream).
            self.calls.wait(self.calls.current_stream(device), self.done)
            return mailbox
        return None

    def _unread(self, mailbox: Mailbox) -> bool:
        """True while a rank may still read some region of `mailbox`: this rank has not summed
        an operation placed there, or a peer has not said (in a later handshake) that it has."""
        known = self._known_low
        for needs in mailbox.placed.values():
            if needs is None:
                return True
            for rank, set_id, number in needs:
                if known.get((rank, set_id), 0) <= number:
                    return True
        return False

    def _every_sum_ran(self) -> bool:
        return all(self.calls.fired(done) for _, done in self._peer_events.values())

    def _export(self, need: int) -> Mailbox:
        size = max(MAILBOX_BYTES, need)
        pointer, handle = self.calls.export(self.device, size)
        mailbox = Mailbox(len(self._mailboxes), pointer, size, handle,
                           self.calls.view(pointer, size, self.device))
        self._mailboxes.append(mailbox)
        return mailbox

    # -- synchronize -------------------------------------------------------------------------

    def _finish(self, operation: Operation) -> torch.Tensor:
        """synchronize()'s last step: the result, summed now together with every other
        operation whose handshake is already done (one batch: see shared_gpu_reduce), or
        earlier in another operation's batch."""
        with self._summing:
            if operation.outcome is None:
                self._sum_batch(operation)
        if isinstance(operation.outcome, BaseException):
            raise operation.outcome
        return operation.outcome

    def _sum_batch(self, first: Operation) -> None:
        with self._lock:
            batch = [first]
            for handle, other in self._unsummed.items():
                if other is first:
                    continue
                # In submission order, up to the first handshake not done yet (the core
                # completes a step's handshakes together, so later ones rarely are).
                try:
                    done = _core.succeeded(handle)
                except Exception:  # released just now by another thread's synchronize()
                    done = False
                if not done:
                    break
                batch.append(other)
            for operation in batch:
                self._unsummed.pop(operation.handle, None)
        # (operation, entries, regions) of those whose ranks agree; regions: each rank's list of
        # its copies of the members, in rank order
        planned = []
        for operation in batch:
            try:
                entries = self._entries(operation)
                handshake.check_agreement(operation.name, entries, partial(_own_list, operation))
                with self._lock:
                    regions = [self._region(operation, entry) for entry in entries]
                planned.append((operation, entries, regions))
            except Exception as error:  # failed alike on every rank before any read
                operation.outcome = error
                self._settle(operation, [])
        if not planned:
            return
        self.batches += 1
        # Until every peer's copy of the batch ran: on the CPU, bounded by the peer timeout (a
        # dead peer's event may never fire; a stream waiting for it would hang this rank's GPU
        # work). A peer's ready event was recorded after each of its copies that its handshakes
        # announced, so one query per peer covers the whole batch.
        peers = {e.rank for _, entries, _ in planned for e in entries if e.rank != self.rank}
        timeout = _peer_timeout_s()
        stuck = first_unfired(self.calls.fired, {r: self._peer_events[r][0] for r in peers},
                              timeout)
        if stuck is not None:
            for operation, _, _ in planned:
                operation.outcome = KoloError(
                    f"rank {self.rank}: tensor '{operation.name}': the copy of rank {stuck} "
                    f"into the shared GPU's memory did not finish within {timeout:.0f} s (the "
                    f"peer timeout; is rank {stuck} still alive?)")
                self._settle(operation, [])
            return
        sums = []  # every member of every operation, in order
        for operation, entries, regions in planned:
            joined = len(entries) < operation.members
            for i, (tensor, output) in enumerate(zip(operation.tensors, operation.outputs)):
                sums.append(Sum([copies[i] for copies in regions],
                                tensor if output is None else output, operation.reduction,
                                operation.members, joined))
        calls = self.calls
        try:
            stream = calls.current_stream(first.tensors[0].device)
            calls.wait(stream, self.ready)  # this rank's own copies, where submit queued them
            with torch.no_grad():
                reduce_all(sums)
            calls.record(self.done, stream)
        except Exception as error:  # nothing read the peers' regions after this
            for operation, _, _ in planned:
                operation.outcome = error
                self._settle(operation, [])
            raise
        results = iter(sums)
        for operation, entries, _ in planned:
            mine = [next(results).result for _ in operation.tensors]
            operation.outcome = mine if operation.grouped else mine[0]
            # Summed: this rank reads the peers' regions no more, and says so in its next
            # handshakes.
            self._settle(operation, [(e.rank, operation.set_id, e.number) for e in entries
                                     if e.rank != self.rank])

    def _entries(self, operation: Operation) -> list[handshake.Entry]:
        """What every rank said in the operation's handshake (joined ranks left out); notes the
        peers' low marks."""
        raw = operation.payload.tobytes()
        entries = [e for e in (handshake.parse(raw[i:i + handshake.PAYLOAD_BYTES])
                               for i in range(0, len(raw), handshake.PAYLOAD_BYTES)) if e]
        with self._lock:
            for entry in entries:
                key = (entry.rank, operation.set_id)
                if self._known_low.get(key, 0) < entry.low:
                    self._known_low[key] = entry.low
        return entries

    def _forget(self, operation: Operation) -> None:
        """The handshake failed (a mismatch the core found, a peer gone): nobody reads this
        operation's regions."""
        with self._lock:
            self._unsummed.pop(operation.handle, None)
        self._settle(operation, [])

    def _settle(self, operation: Operation, needs: list) -> None:
        with self._lock:
            operation.mailbox.placed[(operation.set_id, operation.number)] = needs
            marks = self._marks.get(operation.set_id)
            if marks is not None:
                marks.summed(operation.number)

    def _region(self, operation: Operation, entry: handshake.Entry) -> list:
        """The copies of the operation's members by the rank of `entry`: where this rank's own
        list of dtypes and shapes puts them in that rank's region (check_agreement proved the
        lists equal)."""
        if entry.rank == self.rank:
            return operation.regions
        mailbox = self._peer_memory.get((entry.rank, entry.mailbox))
        if mailbox is None:
            pointer = self.calls.import_(self.device, entry.handles[0])
            self._peer_pointers.append(pointer)
            mailbox = self._peer_memory[(entry.rank, entry.mailbox)] = Mailbox(
                entry.mailbox, pointer, entry.mailbox_size, entry.handles[0],
                self.calls.view(pointer, entry.mailbox_size, self.device))
        if entry.rank not in self._peer_events:
            self._peer_events[entry.rank] = (self.calls.open_event(self.device, entry.handles[1]),
                                             self.calls.open_event(self.device, entry.handles[2]))
        return [mailbox.region(entry.offset + start, own.dtype, tuple(own.shape), own.numel())
                for start, own in zip(operation.starts, operation.regions)]

    # -- process sets and the end of a session -----------------------------------------------

    def forget_set(self, set_id: int) -> None:
        """After a process set was removed: every member synchronized its operations on it
        first (the core refuses the removal otherwise), so nobody reads their regions once the
        sums ran (the done events); the set's numbers start again if its id comes back."""
        with self._lock:
            for key in [k for k in self._known_low if k[1] == set_id]:
                del self._known_low[key]  # a set that comes back under the id starts anew
            for mailbox in self._mailboxes:
                for op, needs in mailbox.placed.items():
                    if needs:
                        mailbox.placed[op] = [n for n in needs if n[1] != set_id]
            self._marks.pop(set_id, None)
            self._members.pop(set_id, None)

    def close(self) -> None:
        """Unmaps the peers' mailboxes and frees this rank's once every rank reached this point
        (an allreduce at shutdown, after this rank's own GPU work finished); when the peers do
        not come within a second, this rank's mailboxes are left to the process's end rather
        than freed under a peer still reading them."""
        synchronize = getattr(self.calls, "synchronize", None)
        if synchronize is not None:
            synchronize()
        everyone_here = False
        try:
            handle = kolo._submit(_core.OP_ALLREDUCE, "allreduce", torch.zeros(1), None,
                                  "kolo.shared_gpu.close")
            deadline = time.monotonic() + 1.0
            while not _handles.poll(handle) and time.monotonic() < deadline:
                time.sleep(1e-3)
            if _handles.poll(handle):
                _handles.synchronize(handle)
                everyone_here = True
        except (KoloError, ValueError):
            pass
        self._unsummed.clear()
        for pointer in self._peer_pointers:
            self.calls.close(self.device, pointer)
        self._peer_pointers.clear()
        self._peer_memory.clear()
        if everyone_here and self._every_sum_ran():
            for mailbox in self._mailboxes:
                self.calls.free(self.device, mailbox.pointer)
        self._mailboxes.clear()


def _own_list(operation: Operation) -> str:
    """"rank R submitted float32 [2, 3], ..." for a group's mismatch message (at most 8)."""
    if not operation.grouped:
        return ""
    described = [f"{str(r.dtype).replace('torch.', '')} [{', '.join(map(str, r.shape))}]"
                 for r in operation.regions[:8]]
    more = f" and {len(operation.regions) - 8} more" if len(operation.regions) > 8 else ""
    return f"rank {kolo.rank()} submitted {', '.join(described)}{more}"


def _peer_timeout_s() -> float:
    return float(_core.config()["peer_timeout_s"])
