"""horovod.torch behaviours that Horovod's own test_torch.py checks (scale factors, reducescatter
gradients, sparse allreduce, optimizer state without gradients, object helpers on sets), and the
host staging path for tensors on other devices, forced on CPU tensors; on 2 and 3 ranks."""

import pytest

from conftest import run_job

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

FORCE_STAGING = {"KOLO_STAGE_THROUGH_HOST": "1"}


@pytest.mark.parametrize("np_", [2, 3])
def test_horovod_semantics(np_):
    run_job(np_, "torch_horovod_semantics.py", timeout=240).assert_ok(np_)


def test_horovod_semantics_through_staging():
    result = run_job(2, "torch_horovod_semantics.py", env=FORCE_STAGING, timeout=240)
    result.assert_ok(2)
    assert "not a kolo setting" not in result.output, result.output


@pytest.mark.parametrize("np_", [2, 3])
def test_every_collective_through_staging(np_):
    run_job(np_, "torch_staging.py", env=FORCE_STAGING, timeout=180).assert_ok(np_)
