"""Faults on GPUs end like faults on CPUs (issue 23, point 5), on a real GPU (scripts/
device_check.sh runs this file on a lent machine); every test skips with its reason where torch
sees no CUDA device, as in CI. The same rules on the CPU: test_errors.py (dead and frozen peers),
test_elastic_reset.py (resets), and the stand-in NCCL's nccl_fake_gpu_peer_death.py."""

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason=f"no CUDA device visible (torch {torch.__version__}, CUDA build: {torch.version.cuda})")

needs_two_gpus = pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason=f"NCCL needs a GPU per rank; this machine has {torch.cuda.device_count()}")

FAULT_ENV = {"KOLO_PEER_TIMEOUT": "3", "KOLO_FAILURE_GRACE_SECONDS": "15"}


def survivors_fail(np_, victim, tmp_path, *fault, path, env=None):
    result = run_job(np_, "cuda_dead_peer.py", str(victim), *fault, timeout=120,
                     env={**FAULT_ENV, "DEAD_PEER_SYNC_DIR": str(tmp_path), **(env or {})})
    for rank in range(np_):
        if rank != victim:
            lines = result.lines_of(rank)
            assert f"rank {rank} path {path}" in lines, result.output
            assert f"rank {rank} OK" in lines, result.output
    assert result.returncode != 0, result.output
    return result


# One host, every rank on GPU 0: the ranks sum on the shared GPU (shared_gpu.py), or take the
# asynchronous host path when Horovod's variable asks for host collectives.
SHARED_PATHS = [pytest.param({}, "shared GPU", id="shared-gpu"),
                pytest.param({"HOROVOD_GPU_ALLREDUCE": "MPI"}, "async host", id="async-host")]


@pytest.mark.parametrize("env,path", SHARED_PATHS)
@pytest.mark.parametrize("np_,victim", [(2, 1), (3, 0)])
def test_a_killed_rank_fails_the_ranks_sharing_its_gpu(np_, victim, env, path, tmp_path):
    survivors_fail(np_, victim, tmp_path, path=path, env=env)


@pytest.mark.parametrize("env,path", SHARED_PATHS)
def test_a_frozen_rank_fails_the_ranks_sharing_its_gpu(env, path, tmp_path):
    result = survivors_fail(2, 1, tmp_path, "stop", path=path, env=env)
    assert "no progress" in result.output, result.output


@needs_two_gpus
@pytest.mark.parametrize("fault", [(), ("stop",)])
def test_a_rank_killed_or_frozen_inside_nccl_fails_the_others(fault, tmp_path):
    survivors_fail(2, 1, tmp_path, *fault, path="nccl")


def elastic(np_, tmp_path, *faults, peer_timeout=5, launcher_args=()):
    marker = tmp_path / "markers"
    marker.mkdir()
    # On the H200 (sessions 39 and 44) the np 2 resets ran past the device check's step: each
    # rank prints its threads' stacks every 45 s and kolo's stall check names the waiting
    # tensors after 15 s, so that a hang reports where it waits before the job's timeout.
    result = run_job(np_, "elastic_train.py", "--device", "cuda", "--marker-dir", str(marker),
                     *faults, timeout=150,
                     env={"KOLO_PEER_TIMEOUT": str(peer_timeout), "WORKER_STACKS_AFTER_S": "45",
                          "HOROVOD_STALL_CHECK_TIME_SECONDS": "15"},
                     launcher_args=launcher_args)
    assert any(line.startswith("FINAL") for line in result.lines_of(0)), result.output
    return result


# The peer timeout bounds the wait for a peer that stalls inside a transfer (and the deadlock
# watch, where every rank waits): a CUDA step of a reset that kept one rank's background thread
# from its transfers for 5 s (waiting for the GIL, say) would fail each new session in turn, a
# loop of resets that looks like a hang from outside. A rank merely late to a collective does
# not trip it (on the CPU a reset with one rank 14 s late passes at 5 s). Each np 2 job runs with
# 5 s and with the default 30 s, which tells such a loop from a wait on the next lent GPU.
PEER_TIMEOUTS = [pytest.param(5, id="peer-timeout-5"), pytest.param(30, id="peer-timeout-30")]


@pytest.mark.parametrize("np_,peer_timeout", [
    pytest.param(1, 5, id="1"), pytest.param(2, 5, id="2-peer-timeout-5"),
    pytest.param(2, 30, id="2-peer-timeout-30")])
def test_elastic_reset_rebuilds_the_gpu_path(np_, peer_timeout, tmp_path):
    # np 1: alone on its GPU, the rank's CUDA broadcasts run in NCCL, whose communicator the
    # reset ends and the next session makes anew; np 2 on one GPU under plain kolorun (not an
    # elastic launch): allreduce summed on the shared GPU, the other operations on the async
    # host path.
    result = elastic(np_, tmp_path, "--raise", f"0:4:{np_ - 1}", peer_timeout=peer_timeout)
    result.assert_ok(np_)
    assert len([line for line in result.lines_of(0) if line.startswith("SYNC")]) == 2, \
        result.output


@pytest.mark.parametrize("peer_timeout", PEER_TIMEOUTS)
def test_elastic_job_goes_on_alone_on_its_gpu_after_a_worker_dies(peer_timeout, tmp_path):
    # Two one-slot "hosts" on one machine share GPU 0 (async host path); the second is killed
    # after its backward, and the survivor's next session, alone on the GPU, decides its path anew.
    result = elastic(2, tmp_path, "--kill", "0:4:1:KILL", peer_timeout=peer_timeout,
                     launcher_args=("--min-np", "1", "-H", "localhost:1,127.0.0.1:1"))
    syncs = [line for line in result.lines_of(0) if line.startswith("SYNC")]
    assert [line.split()[1] for line in syncs] == ["size=2", "size=1"], result.output
    assert "rank 0 OK" in result.lines_of(0), result.output
