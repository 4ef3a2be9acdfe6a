"""Elastic training for PyTorch (``horovod.torch.elastic``, also ``hvd.elastic``).

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for state.batch, (data, target) in enumerate(loader):
                ...
                state.commit()

    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    train(state)

Run it with ``kolorun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./discover.sh``.
"""

from kolo.elastic.run_loop import run_fn
from kolo.torch.elastic.sampler import ElasticSampler
from kolo.torch.elastic.state import TorchState
from kolo.torch.mpi_ops import init, shutdown


def run(func):
    """Decorator running ``func(state, ...)`` elastically: the state is synced from rank 0, then
    func runs; if a worker is lost (``HorovodInternalError``) the state rolls back to its last
    commit, if the hosts change (``HostsUpdatedInterrupt``) it is kept; either way the job is
    re-formed (``shutdown(); init()``), the reset callbacks run, the state is synced and func is
    called again. The wrapped function must not be preceded by collectives that new workers
    would not make: new workers start by syncing the state."""
    return run_fn(func, _reset)


def _reset() -> None:
    shutdown()
    init()


__all__ = ["ElasticSampler", "TorchState", "run"]
