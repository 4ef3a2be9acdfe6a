"""16-bit float types through PyTorch tensors on 2 and 3 ranks."""

import pytest

from conftest import run_job

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")


@pytest.mark.parametrize("np_", [2, 3])
def test_torch_tensors_every_float_type(np_):
    run_job(np_, "torch_dtypes.py", timeout=180).assert_ok(np_)
