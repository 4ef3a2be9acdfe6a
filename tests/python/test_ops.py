"""alltoall, reducescatter, grouped operations, fp16 compression, Adasum and SyncBatchNorm under
kolorun on 2 and 3 ranks (Adasum also on 4, a power of two with two tree levels)."""

import pytest

from conftest import run_job


@pytest.mark.parametrize("np_", [2, 3])
def test_torch_alltoall_reducescatter_grouped_fp16(np_):
    pytest.importorskip("torch")
    run_job(np_, "torch_ops.py", timeout=180).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3, 4])
def test_adasum_matches_numpy_reference(np_):
    run_job(np_, "adasum.py", timeout=180).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_adasum_distributed_optimizer(np_):
    pytest.importorskip("torch")
    run_job(np_, "adasum.py", "--torch", timeout=180).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_sync_batch_norm_matches_one_batch_norm(np_):
    pytest.importorskip("torch")
    run_job(np_, "sync_batch_norm.py", timeout=180).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_numpy_alltoall_reducescatter_grouped(np_):
    run_job(np_, "numpy_ops.py", timeout=120).assert_ok(np_)
