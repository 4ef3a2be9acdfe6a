"""The state an elastic job keeps across resets, framework-free (``horovod.common.elastic``'s
``State`` and ``ObjectState``): what ``commit()`` saves, ``restore()`` rolls back to after a
failure, and ``sync()`` sends from rank 0 to every rank after a reset.

A framework binding gives the state its broadcast (``bcast_object``) and ``get_rank``;
``kolo.torch.elastic.TorchState`` adds models, optimizers and samplers.
"""

from __future__ import annotations

import copy
import queue
from typing import Any, Callable, Iterable

from kolo.elastic import host_notices, launcher_link
from kolo.elastic.launcher_link import HostUpdateResult
from kolo.exceptions import HostsUpdatedInterrupt


class State:
    """State tracked in memory across workers.

    Args:
        bcast_object: broadcasts a picklable object from rank 0 and returns rank 0's value.
        get_rank: returns this worker's current rank.
    """

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages: queue.Queue = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks: list[Callable[[], None]] = []
        # Commits made so far; rank 0 publishes the count so kolorun can say where a reset
        # resumes from.
        self._commits = 0
        host_notices.register(self)

    def register_reset_callbacks(self, callbacks: Iterable[Callable[[], None]]) -> None:
        """Adds functions to call after every reset (a worker added or removed), once the new
        membership is up: e.g. to rescale the learning rate to the new ``size()``."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        """Called by ``run`` after each reset: drops stale host messages, runs the callbacks."""
        self._host_messages = queue.Queue()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp: int, update_res: HostUpdateResult) -> None:
        """Records a host change (`timestamp` grows with each change) for the next
        ``check_host_updates``; the launcher's changes are also read there directly."""
        self._host_messages.put((timestamp, update_res))

    def commit(self) -> None:
        """Saves the state (the point a failure rolls back to), then checks for host changes:
        raises ``HostsUpdatedInterrupt`` on every rank together if the hosts changed.

        A commit copies the state (from the GPU, if it lives there): commit every few batches
        rather than every batch if that copy is slow; a failure loses at most the work done
        since the last commit."""
        self.save()
        self._commits += 1
        if self._rank() == 0:
            launcher_link.publish_commit(self._commits)
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """Raises ``HostsUpdatedInterrupt`` (on every rank at the same call) if hosts were added
        or removed since the last check. ``skip_sync`` is True when hosts were only removed:
        the remaining workers already hold the same state.

        Rank 0 decides for everyone (its view is broadcast), so all ranks raise together or
        none does; this is a collective: every rank must call it."""
        prev_timestamp = last_timestamp = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        if self._rank() == 0:
            messages = []
            while not self._host_messages.empty():
                messages.append(self._host_messages.get())
            messages.append(launcher_link.hosts_updated())
            for timestamp, result in messages:
                if timestamp > prev_timestamp:
                    last_timestamp = max(last_timestamp, timestamp)
                    update |= result
        else:
            # Only rank 0's view counts; drain ours so it does not pile up.
            while not self._host_messages.empty():
                self._host_messages.get()
        prev_timestamp, last_timestamp, update = self._bcast_object(
            (prev_timestamp, last_timestamp, int(update)))
        self._last_updated_timestamp = last_timestamp
        if last_timestamp > prev_timestamp:
            raise HostsUpdatedInterrupt(HostUpdateResult(update) == HostUpdateResult.removed)

    def save(self) -> None:
        """Saves the state in host memory."""
        raise NotImplementedError()

    def restore(self) -> None:
        """Rolls back to the last saved state, undoing every change since."""
        raise NotImplementedError()

    def sync(self) -> None:
        """Makes every rank's state equal to rank 0's."""
        raise NotImplementedError()


class ObjectState(State):
    """State made of plain picklable Python objects, given as keyword arguments and exposed as
    attributes (``state.epoch``, ``state.batch``).

    Args:
        bcast_object: broadcasts a picklable object from rank 0 (syncs the saved values).
        get_rank: returns this worker's current rank.
        kwargs: the attributes and their initial values.
    """

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int],
                 **kwargs: Any):
        self._bcast_object = bcast_object
        for attr, value in kwargs.items():
            setattr(self, attr, value)
        self._saved_state = copy.deepcopy(kwargs)
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        # Copies, not references: a list or dict attribute changed in place after the commit
        # must not change what a restore goes back to.
        self._saved_state = {attr: copy.deepcopy(getattr(self, attr))
                             for attr in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        # The values are rank 0's *saved* ones: a sync follows a reset, and what rank 0 had
        # committed is what every rank resumes from.
        # The commit count and the last host change seen travel along, so a worker that joined
        # later neither restarts the count nor mistakes an old host change for news.
        self._saved_state, self._commits, self._last_updated_timestamp = self._bcast_object(
            (self._saved_state, self._commits, self._last_updated_timestamp))
        self._set_attrs()

    def _set_attrs(self) -> None:
        for attr, value in self._saved_state.items():
            setattr(self, attr, copy.deepcopy(value))
