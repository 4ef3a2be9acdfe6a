"""Every collective (Adasum, sparse allreduce and a sparse embedding's step too) on CUDA tensors
against the same on CPU tensors, per dtype, at np 1 and at np 2 sharing one GPU
(scripts/device_check.sh runs this file on a lent machine); every test skips with its reason
where torch sees no CUDA device, as in CI. The worker itself was checked on this CPU machine
with `kolorun -np 2 python3 tests/python/workers/device_vs_cpu.py cpu` (and np 1 and 3)."""

import pytest

from conftest import run_job

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason=f"no CUDA device visible (torch {torch.__version__}, CUDA build: {torch.version.cuda})")


def test_every_op_on_cuda_equals_the_cpu_at_one_rank():
    run_job(1, "device_vs_cpu.py", "cuda", timeout=240).assert_ok(1)


def test_every_op_on_cuda_equals_the_cpu_at_two_ranks_sharing_the_gpu():
    run_job(2, "device_vs_cpu.py", "cuda", timeout=240,
            launcher_args=("-H", "localhost:1,127.0.0.1:1")).assert_ok(2)
