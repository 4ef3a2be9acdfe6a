"""The asynchronous host path on a real GPU (scripts/device_check.sh runs this file on a lent
machine); every test skips with its reason where torch sees no CUDA device, as in CI."""

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason=f"no CUDA device visible (torch {torch.__version__}, CUDA build: {torch.version.cuda})")


def test_cuda_tensors_on_one_rank():
    # Alone on its GPU a rank would take NCCL where torch brought it: Horovod's variable asks for
    # the host path (what a job sharing a GPU, or without NCCL, gets).
    run_job(1, "cuda_async_host.py", env={"HOROVOD_GPU_OPERATIONS": "GLOO"},
            timeout=180).assert_ok(1)


@pytest.mark.parametrize("env", [{}, {"HOROVOD_GPU_ALLREDUCE": "MPI"}],
                         ids=["allreduce-on-the-gpu", "allreduce-through-the-host"])
def test_two_ranks_sharing_one_gpu(env):
    # Two one-slot "hosts" on one machine: both ranks on GPU 0, where NCCL would refuse them.
    # Allreduce sums on the GPU (shared_gpu.py) unless asked to go through the host.
    run_job(2, "cuda_async_host.py", timeout=180, env=env,
            launcher_args=("-H", "localhost:1,127.0.0.1:1")).assert_ok(2)


@pytest.mark.parametrize("np_", [2, 3])
def test_ranks_sharing_one_gpu_sum_on_it(np_):
    # CUDA IPC for real: mailboxes, interprocess events, the sums on the GPU.
    run_job(np_, "torch_shared_gpu.py", "cuda", timeout=240).assert_ok(np_)
