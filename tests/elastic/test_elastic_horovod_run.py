"""``horovod.run`` with elastic parameters: the function trains inside ``hvd.elastic.run`` on an
elastic kolorun job and the values of the last round's workers come back by final rank; a worker
killed on the way is replaced by nothing (min_num_proc=1) and reports nothing."""

import os
import signal
import threading

import horovod

from elastic_harness import FAKE_SSH_DIR

STEPS = 40


def elastic_count(steps, victim_marker):
    """Module-level: pickled by reference, imported on the workers. Counts allreduced ones; the
    worker of first-round rank 1 kills itself at step 10 when `victim_marker` is a fresh path."""
    import time

    import torch

    import horovod.torch as hvd
    hvd.init()
    state = hvd.elastic.TorchState(step=0, total=0.0)

    @hvd.elastic.run
    def train(state):
        while state.step < steps:
            if (victim_marker and state.step == 10 and os.environ.get("KOLO_RANK") == "1"
                    and not os.path.exists(victim_marker)):
                open(victim_marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            state.total += float(hvd.allreduce(torch.tensor(1.0), op=hvd.Sum))
            state.step += 1
            time.sleep(0.02)
            state.commit()
        return state.total

    return train(state), hvd.rank(), hvd.size()


def run_bounded(**kwargs):
    results = []
    worker = threading.Thread(target=lambda: results.append(horovod.run(elastic_count, **kwargs)),
                              daemon=True)
    worker.start()
    worker.join(timeout=240)
    assert not worker.is_alive(), "horovod.run did not return within 240 s (hang?)"
    assert results, "horovod.run raised (see the output above)"
    return results[0]


def test_elastic_horovod_run_returns_the_last_rounds_values(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{FAKE_SSH_DIR}:{os.environ['PATH']}")
    monkeypatch.setenv("KOLO_PEER_TIMEOUT", "3")
    undisturbed = run_bounded(args=(STEPS, ""), num_proc=2, min_num_proc=1, max_num_proc=2,
                              hosts="127.0.0.2:1,127.0.0.3:1")
    assert undisturbed == [(2.0 * STEPS, 0, 2), (2.0 * STEPS, 1, 2)]
    shrunk = run_bounded(args=(STEPS, str(tmp_path / "killed")), num_proc=2, min_num_proc=1,
                         max_num_proc=2, hosts="127.0.0.2:1,127.0.0.3:1")
    # Steps 0..9 counted two workers, the rest one (step 10 was redone after the rollback).
    assert shrunk == [(2.0 * 10 + 1.0 * (STEPS - 10), 0, 1)]
