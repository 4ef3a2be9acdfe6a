"""The horovod.torch API on kolo (`import horovod.torch as hvd`), on 2 and 3 ranks."""

import pytest

from conftest import run_job

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")


@pytest.mark.parametrize("np_", [2, 3])
def test_torch_api_collectives_autograd_and_state(np_):
    run_job(np_, "torch_api.py", timeout=180).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_distributed_optimizer(np_):
    run_job(np_, "torch_optimizer.py", timeout=240).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("when", ["early", "late"])
def test_op_on_rank0_only_fails_clearly(np_, when):
    result = run_job(np_, "torch_rank0_only.py", when, timeout=60)
    result.assert_ok(np_)
    assert any("only.on.rank0" in line for line in result.lines_of(0)), result.output


@pytest.mark.parametrize("np_", [2, 3])
def test_per_op_fast_paths(np_):
    run_job(np_, "torch_fast_path.py", timeout=180).assert_ok(np_)
