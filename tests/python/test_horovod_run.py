"""``horovod.run`` / ``horovod.runner.run``: a function runs on every rank through kolorun and the
results come back in rank order; a rank's exception becomes an error naming the rank."""

import warnings

import pytest

import horovod
import horovod.runner

JOB_TIMEOUT = 180  # seconds for one horovod.run job on a loaded machine


def ranks_and_sum(offset, scale=1):
    """Module-level: pickled by reference, imported on the ranks."""
    import torch

    import horovod.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + offset)]), op=hvd.Sum)
    result = (hvd.rank(), hvd.size(), float(total.item()) * scale)
    hvd.shutdown()
    return result


def fails_on_rank_one():
    import horovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("bad shard 7 on this rank")
    return hvd.rank()


def fails_on_rank_one_while_the_others_sleep():
    import time

    import horovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise RuntimeError("rank 1 fails outside any collective")
    time.sleep(120)
    return hvd.rank()


@pytest.fixture(autouse=True)
def _bounded(monkeypatch):
    # A stuck job fails the test instead of hanging CI.
    monkeypatch.setenv("KOLO_START_TIMEOUT", "60")
    yield


def _run_bounded(*args, **kwargs):
    import threading
    outcome = {}

    def target():
        try:
            outcome["value"] = horovod.run(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(JOB_TIMEOUT)
    if thread.is_alive():
        pytest.fail(f"horovod.run did not return within {JOB_TIMEOUT} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.parametrize("num_proc", [2, 3])
def test_results_come_back_in_rank_order(num_proc):
    results = _run_bounded(ranks_and_sum, args=(10,), kwargs={"scale": 2}, num_proc=num_proc)
    expected_total = 2.0 * sum(rank + 10 for rank in range(num_proc))
    assert results == [(rank, num_proc, expected_total) for rank in range(num_proc)]


def test_runner_run_is_the_same_function_and_takes_closures():
    assert horovod.run is horovod.runner.run
    base = 5

    def local_function(x):  # not importable on the ranks: travels by value (cloudpickle)
        import os
        return base + x + int(os.environ["KOLO_RANK"])

    pytest.importorskip("cloudpickle")
    assert _run_bounded(local_function, args=(1,), num_proc=2) == [6, 7]


@pytest.mark.parametrize("num_proc, use_mpi", [(2, None), (3, None), (2, True)])
def test_an_exception_on_a_rank_is_named(num_proc, use_mpi):
    import kolo
    if use_mpi and not kolo._core.MPI_BUILT:
        pytest.skip("kolo's MPI plugin is not built (libopenmpi-dev)")
    with pytest.raises(RuntimeError) as raised:
        _run_bounded(fails_on_rank_one, num_proc=num_proc, use_mpi=use_mpi)
    message = str(raised.value)
    # Horovod's first words, which its own test_interactiverun.py matches, then kolo's.
    lead = ("mpirun failed with exit code" if use_mpi else
            "Horovod detected that one or more processes exited with non-zero status")
    assert message.startswith(lead), message
    assert "rank 1 raised ValueError: bad shard 7 on this rank" in message
    assert "fails_on_rank_one" in message  # the rank's traceback
    assert isinstance(raised.value.__cause__, ValueError)


def test_deprecated_np_still_works():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = _run_bounded(ranks_and_sum, args=(0,), np=2)
    assert [r[0] for r in results] == [0, 1]
    assert any("np is deprecated" in str(w.message) for w in caught)


def test_bad_arguments_fail_before_anything_starts():
    with pytest.raises(ValueError, match="hosts and hostfile"):
        horovod.run(ranks_and_sum, hosts="localhost:2", hostfile="hosts")
    with pytest.raises(ValueError, match="use_gloo and use_mpi"):
        horovod.run(ranks_and_sum, use_gloo=True, use_mpi=True)
    with pytest.raises(ValueError, match="num_proc must be at least 1"):
        horovod.run(ranks_and_sum, num_proc=0)


@pytest.mark.parametrize("use_mpi", [None, True])
def test_a_failed_rank_ends_the_job_while_the_others_sleep(use_mpi):
    # Horovod's test_failed_run: the sleepers are ended "way before the 2-minute delay". Under
    # mpirun the failing rank leaves without MPI_Finalize for that (backends/mpi_plugin.cc).
    import time

    import kolo
    if use_mpi and not kolo._core.MPI_BUILT:
        pytest.skip("kolo's MPI plugin is not built (libopenmpi-dev)")
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="rank 1 raised RuntimeError"):
        _run_bounded(fails_on_rank_one_while_the_others_sleep, num_proc=2, use_mpi=use_mpi)
    elapsed = time.monotonic() - started
    assert elapsed < 60, f"horovod.run took {elapsed:.0f} s"
