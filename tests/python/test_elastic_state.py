"""hvd.elastic in one process: State/ObjectState commit, restore and sync, host-change
notifications, the run loop's reactions (restore, reset, callbacks, skip_sync, reset limit,
removed worker), ElasticSampler's bookkeeping across a change of size, TorchState's handlers.
Multi-rank resets are in test_elastic_reset.py; kolorun's elastic mode in tests/elastic/."""

import signal
import types

import pytest

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

import horovod.torch as hvd  # noqa: E402
from horovod.common.elastic import ObjectState, State, run_fn  # noqa: E402
from kolo.elastic import HostUpdateResult, ResetLimitExceeded, run_loop  # noqa: E402
from kolo.elastic.run_loop import REMOVED_EXIT_DEADLINE_S  # noqa: E402
from kolo.exceptions import (  # noqa: E402
    HorovodInternalError, HostsUpdatedInterrupt, WorkerRemovedError)
from kolo.torch.elastic import sampler as sampler_module  # noqa: E402


class Broadcasts:
    """A stand-in for broadcast_object that counts calls and returns what rank 0 'sent'."""

    def __init__(self, replace=None):
        self.calls = 0
        self.replace = replace

    def __call__(self, obj):
        self.calls += 1
        return obj if self.replace is None else self.replace(obj)


def make_state(**kwargs):
    return ObjectState(Broadcasts(), lambda: 0, **kwargs)


def test_object_state_commit_restore_roll_back_to_the_commit():
    state = make_state(epoch=0, batch=0, seen=[])
    state.epoch, state.batch = 2, 7
    state.seen.append(1)
    state.commit()
    state.batch = 9
    state.seen.append(2)  # changed in place after the commit
    state.restore()
    assert (state.epoch, state.batch, state.seen) == (2, 7, [1])


def test_object_state_sync_takes_rank_0s_committed_values():
    rank0 = {"epoch": 5, "batch": 3}
    state = ObjectState(Broadcasts(replace=lambda obj: (dict(rank0), 12, 0)), lambda: 1,
                        epoch=0, batch=0)
    state.batch = 99  # uncommitted work is replaced too
    state.sync()
    assert (state.epoch, state.batch, state._commits) == (5, 3, 12)


@pytest.mark.parametrize("update,skip_sync", [(HostUpdateResult.added, False),
                                              (HostUpdateResult.removed, True),
                                              (HostUpdateResult.mixed, False)])
def test_check_host_updates_raises_once_per_change(update, skip_sync):
    state = make_state(batch=0)
    state.check_host_updates()  # nothing yet
    state.on_hosts_updated(10, update)
    with pytest.raises(HostsUpdatedInterrupt) as raised:
        state.commit()
    assert raised.value.skip_sync is skip_sync
    state.check_host_updates()  # the same change is not news twice
    state.on_hosts_updated(5, HostUpdateResult.added)  # older than the last one seen
    state.check_host_updates()


def test_removed_and_added_together_need_a_sync():
    state = make_state(batch=0)
    state.on_hosts_updated(1, HostUpdateResult.removed)
    state.on_hosts_updated(2, HostUpdateResult.added)
    with pytest.raises(HostsUpdatedInterrupt) as raised:
        state.check_host_updates()
    assert raised.value.skip_sync is False


def test_a_non_zero_rank_follows_rank_0s_decision():
    # Rank 1 has news of its own but rank 0 (whose answer the broadcast returns) has none.
    state = ObjectState(Broadcasts(replace=lambda obj: (0, 0, 0)), lambda: 1, batch=0)
    state.on_hosts_updated(10, HostUpdateResult.added)
    state.check_host_updates()


class Recorder(ObjectState):
    def __init__(self):
        super().__init__(Broadcasts(), lambda: 0, batch=0)
        self.events = []

    def sync(self):
        self.events.append("sync")
        super().sync()

    def restore(self):
        self.events.append("restore")
        super().restore()


def test_run_restores_resets_and_reruns_after_an_internal_error():
    state = Recorder()
    state.register_reset_callbacks([lambda: state.events.append("callback")])
    calls = []

    def reset():
        state.events.append("reset")

    def train(state, value):
        calls.append(value)
        if len(calls) == 1:
            state.batch = 5
            raise HorovodInternalError("rank 2 died")
        return state.batch

    assert run_fn(train, reset)(state, "x") == 0  # the uncommitted batch = 5 was rolled back
    assert state.events == ["sync", "restore", "reset", "callback", "sync"]
    assert calls == ["x", "x"]


@pytest.mark.parametrize("skip_sync", [True, False])
def test_run_keeps_state_after_hosts_updated_and_skips_sync_if_told(skip_sync):
    state = Recorder()
    attempts = []

    def train(state):
        attempts.append(1)
        if len(attempts) == 1:
            state.batch = 4
            state.commit()
            raise HostsUpdatedInterrupt(skip_sync)
        return state.batch

    wrapped = run_fn(train, lambda: state.events.append("reset"))
    assert wrapped(state) == 4
    expected = ["sync", "reset"] + ([] if skip_sync else ["sync"])
    assert state.events == expected


def test_run_retries_a_reset_that_fails_and_syncs_afterwards():
    state = Recorder()
    resets = []

    def reset():
        resets.append(1)
        if len(resets) == 1:
            raise HorovodInternalError("round 3 was superseded while joining it")

    def train(state):
        if not resets:
            raise HostsUpdatedInterrupt(True)
        return "done"

    assert run_fn(train, reset)(state) == "done"
    assert len(resets) == 2
    assert state.events == ["sync", "sync"]  # the failed reset made the skip_sync void


def test_run_gives_up_past_the_reset_limit(monkeypatch):
    monkeypatch.setenv("KOLO_RESET_LIMIT", "2")
    state = Recorder()

    def train(state):
        raise HorovodInternalError("always failing")

    with pytest.raises(ResetLimitExceeded, match="3 resets .* reset limit 2"):
        run_fn(train, lambda: None)(state)


def test_run_ends_a_removed_worker_with_status_0(monkeypatch):
    state = Recorder()
    alarms = []
    fake_signal = types.SimpleNamespace(SIGALRM=signal.SIGALRM, SIG_DFL=signal.SIG_DFL,
                                        signal=lambda *args: None, alarm=alarms.append)
    monkeypatch.setattr(run_loop, "signal", fake_signal)

    def reset():
        raise WorkerRemovedError("round 4 does not include worker ns3:0#5")

    def train(state):
        raise HostsUpdatedInterrupt(True)

    with pytest.raises(SystemExit) as exited:
        run_fn(train, reset)(state)
    assert exited.value.code == 0
    assert alarms == [REMOVED_EXIT_DEADLINE_S]  # an exit that hangs is cut short by SIGALRM


def test_run_does_not_catch_programming_errors():
    state = Recorder()

    def train(state):
        raise ValueError("bad argument")

    with pytest.raises(ValueError):
        run_fn(train, lambda: None)(state)


def test_state_base_class_needs_save_restore_sync():
    state = State(Broadcasts(), lambda: 0)
    with pytest.raises(NotImplementedError):
        state.commit()


class Dataset:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def sampler_as(monkeypatch, rank, size, dataset, state_dict=None, shuffle=True):
    monkeypatch.setattr(sampler_module, "rank", lambda: rank)
    monkeypatch.setattr(sampler_module, "size", lambda: size)
    sampler = sampler_module.ElasticSampler(dataset, shuffle=shuffle, seed=7)
    if state_dict is not None:
        sampler.load_state_dict(state_dict)
    return sampler


@pytest.mark.parametrize("before,after", [(3, 2), (2, 3), (3, 3), (1, 4)])
def test_sampler_splits_what_is_left_after_a_change_of_size(monkeypatch, before, after):
    dataset, batch = Dataset(61), 2
    samplers = [sampler_as(monkeypatch, r, before, dataset) for r in range(before)]
    trained = []
    for sampler in samplers:  # 3 batches on every rank, recorded by each
        local = list(sampler)
        for b in range(3):
            trained += local[b * batch:(b + 1) * batch]
            sampler.record_batch(b, batch)
    states = [s.state_dict() for s in samplers]
    assert all(s == states[0] for s in states), "every rank keeps the same record"
    assert states[0]["processed_num"] == len(trained)
    resumed = [sampler_as(monkeypatch, r, after, dataset, states[0]) for r in range(after)]
    rest = [i for s in resumed for i in s]
    assert len(resumed[0]) == -(-(61 - len(trained)) // after)
    # Every sample exactly once, but for DistributedSampler's padding of the last few.
    assert sorted(set(rest)) == sorted(set(range(61)) - set(trained))
    assert len(rest) - len(set(rest)) == len(rest) - (61 - len(trained))


def test_sampler_set_epoch_clears_the_record_and_reshuffles(monkeypatch):
    sampler = sampler_as(monkeypatch, 0, 2, Dataset(10))
    first = list(sampler)
    sampler.record_batch(0, 3)
    assert sampler.processed_num == 6
    sampler.set_epoch(1)
    assert sampler.processed_num == 0 and len(sampler) == 5
    assert list(sampler) != first
    unshuffled = sampler_as(monkeypatch, 1, 2, Dataset(10), shuffle=False)
    assert list(unshuffled) == [1, 3, 5, 7, 9]


def test_sampler_loads_horovods_processed_num_state(monkeypatch):
    sampler = sampler_as(monkeypatch, 0, 2, Dataset(10), shuffle=False)
    sampler.load_state_dict({"epoch": 0, "processed_num": 4})
    assert list(sampler) == [4, 6, 8]
    assert sampler.processed_num == 4 and sampler.processed_indices == set()


def test_sampler_counts_as_horovod_across_commit_restore_sync_and_set_epoch():
    """Horovod's counter arithmetic: a restore goes back to the committed count, the batches
    recorded after it count on from there, and a sync re-splits what is left."""
    hvd.init()
    try:
        batch, per_rank = 2, 8
        sampler = hvd.elastic.ElasticSampler(Dataset(per_rank * hvd.size()), shuffle=True)
        state = hvd.elastic.TorchState(sampler=sampler)
        state.sync()
        sampler.set_epoch(2)
        sampler.record_batch(0, batch)
        sampler.record_batch(1, batch)
        state.commit()
        sampler.record_batch(2, batch)
        sampler.record_batch(3, batch)
        assert sampler.processed_num == 4 * batch * hvd.size()
        state.restore()
        assert sampler.processed_num == 2 * batch * hvd.size()
        assert len(sampler) == per_rank - 2 * batch
        sampler.record_batch(2, batch)
        assert sampler.processed_num == 3 * batch * hvd.size()
        state.commit()
        state.sync()
        assert sampler.processed_num == 3 * batch * hvd.size()
        assert len(sampler) == per_rank - 3 * batch
        sampler.set_epoch(3)
        assert sampler.processed_num == 0 and len(sampler) == per_rank
    finally:
        hvd.shutdown()


def test_sampler_record_indices_counts_after_the_commit(monkeypatch):
    hvd.init()
    try:
        sampler = hvd.elastic.ElasticSampler(Dataset(6), shuffle=False)
        state = hvd.elastic.TorchState(sampler=sampler)
        sampler.record_indices([0, 5])
        state.commit()
        assert sampler.processed_indices == {0, 5} and sampler.local_indices == set()
        sampler.record_indices([1])
        state.restore()
        assert list(sampler) == [1, 2, 3, 4]
    finally:
        hvd.shutdown()


def test_torch_state_saves_restores_and_syncs_model_and_optimizer():
    hvd.init()
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        state = hvd.elastic.TorchState(model, optimizer, scheduler=scheduler, epoch=1, batch=0)
        assert state.model is model and state.optimizer is optimizer and state.epoch == 1

        def step():
            optimizer.zero_grad()
            model(torch.ones(4, 3)).sum().backward()
            optimizer.step()
            scheduler.step()

        step()
        state.batch = 1
        state.commit()
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        saved_momentum = optimizer.state[model.weight]["momentum_buffer"].clone()
        step()
        state.batch = 2
        state.restore()
        assert state.batch == 1
        assert all(torch.equal(saved[k], v) for k, v in model.state_dict().items())
        assert torch.equal(optimizer.state[model.weight]["momentum_buffer"], saved_momentum)
        assert scheduler.last_epoch == 1 and optimizer.param_groups[0]["lr"] == 0.05
        state.sync()  # one rank: rank 0's state is its own
        assert all(torch.equal(saved[k], v) for k, v in model.state_dict().items())
        replacement = torch.nn.Linear(3, 2)
        state.model = replacement  # a handled attribute: saved at once
        assert state._handlers["model"].value is replacement
    finally:
        hvd.shutdown()


def test_hvd_elastic_is_horovods_module():
    import horovod.torch.elastic as horovod_elastic
    from horovod.torch.elastic.sampler import ElasticSampler
    from horovod.torch.elastic.state import TorchState
    assert hvd.elastic is horovod_elastic
    assert ElasticSampler is hvd.elastic.ElasticSampler and TorchState is hvd.elastic.TorchState


def test_rank_0_reads_kolorun_host_changes_and_publishes_commits(monkeypatch):
    from kolo import _core
    seen_commits = []
    stamp = [(0, "")]
    monkeypatch.setenv("KOLO_ELASTIC", "1")
    monkeypatch.setattr(_core, "elastic_hosts_updated", lambda: stamp[0], raising=False)
    monkeypatch.setattr(_core, "elastic_commit", seen_commits.append, raising=False)
    state = make_state(batch=0)
    state.commit()
    stamp[0] = (3, "removed")
    with pytest.raises(HostsUpdatedInterrupt) as raised:
        state.commit()
    assert raised.value.skip_sync is True
    state.commit()  # stamp 3 was seen: no news
    stamp[0] = (4, "bogus")
    with pytest.raises(ValueError, match="unknown kind 'bogus'"):
        state.check_host_updates()
    assert seen_commits == [1, 2, 3]


def test_reset_limit_must_be_a_whole_number(monkeypatch):
    from kolo.elastic import launcher_link
    monkeypatch.setenv("KOLO_RESET_LIMIT", "many")
    with pytest.raises(ValueError, match="KOLO_RESET_LIMIT='many' is not a whole number"):
        launcher_link.reset_limit()
    monkeypatch.delenv("KOLO_RESET_LIMIT")
    monkeypatch.setenv("HOROVOD_RESET_LIMIT", "3")
    assert launcher_link.reset_limit() == 3


def test_torch_state_resplits_samplers_after_a_reset_without_sync(monkeypatch):
    """Hosts only removed: run() skips the sync, so on_reset must re-split the samplers."""
    monkeypatch.setattr(sampler_module, "rank", lambda: 1)
    monkeypatch.setattr(sampler_module, "size", lambda: 3)
    sampler = sampler_module.ElasticSampler(Dataset(12), shuffle=False)
    state = hvd.elastic.TorchState(sampler=sampler)
    sampler.record_batch(0, 2)  # 6 samples done on 3 ranks
    monkeypatch.setattr(sampler_module, "size", lambda: 2)  # a host left; rank 1 of 2 now
    state.on_reset()
    assert (sampler.num_replicas, list(sampler)) == (2, [7, 9, 11])
