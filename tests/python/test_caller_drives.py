"""A blocking call runs its own negotiation and collective on the caller's thread when every rank
is on one host (core/session.h, Session::drive), and the results are those of the background
thread's path; KOLO_CALLER_DRIVES=0 turns it off. Over TCP (KOLO_SHM_DISABLE=1) the background
thread keeps every cycle."""

import os
import re

import pytest

from conftest import run_job


def driven_cycles(result, np_: int) -> list[int]:
    counts = []
    for rank in range(np_):
        found = [re.search(r"DRIVEN (\d+) OF (\d+)", line) for line in result.lines_of(rank)]
        counts += [int(m.group(1)) for m in found if m]
    assert len(counts) == np_, result.output
    return counts


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_blocking_calls_drive_their_own_cycles(np_):
    result = run_job(np_, "caller_drives.py", "driven", timeout=120)
    result.assert_ok(np_)
    assert all(count > 0 for count in driven_cycles(result, np_)), result.output


# Over TCP (KOLO_SHM_DISABLE=1) the sleeping background thread arms the links for reading, which
# only one thread may do: blocking calls wait for it as before.
@pytest.mark.parametrize("env", [{"KOLO_CALLER_DRIVES": "0"}, {"KOLO_SHM_DISABLE": "1"}])
def test_the_background_thread_runs_every_cycle_when_callers_may_not(env):
    result = run_job(2, "caller_drives.py", "not-driven", env=env, timeout=120)
    result.assert_ok(2)
    assert driven_cycles(result, 2) == [0, 0], result.output


# DistributedOptimizer's allreduces wait for synchronize() on a rank with one core, and run in
# the caller's cycles there; with more cores (no binding) the background thread overlaps them
# with backward. The worker checks the averaged gradients either way.
@pytest.mark.parametrize("np_", [2, 3])
def test_a_one_core_rank_reduces_its_gradients_in_synchronize(np_):
    result = run_job(np_, "deferred_reductions.py", "deferred", timeout=120)
    result.assert_ok(np_)
    assert all(count >= 4 for count in driven_cycles(result, np_)), result.output


def test_ranks_with_several_cores_reduce_gradients_during_backward():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs to give a rank more than one core")
    result = run_job(2, "deferred_reductions.py", "overlapped", timeout=120,
                     launcher_args=("--bind-to", "none"))
    result.assert_ok(2)
    assert driven_cycles(result, 2) == [0, 0], result.output
