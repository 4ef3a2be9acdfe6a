"""prescale/postscale of CUDA tensors as Horovod's GPU kernels apply them
(kolo/torch/device_scale.py). The arithmetic is the same on any device, so it is checked here on
CPU tensors; on a GPU, scripts/device_check.sh runs Horovod's prescale/postscale tests."""

import pytest

torch = pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")

from kolo import _core, _handles  # noqa: E402
from kolo.torch import device_scale  # noqa: E402


def test_float16_is_scaled_by_a_float16_factor_with_one_rounding():
    x = torch.arange(-100, 100, dtype=torch.float16)
    got = device_scale.scaled(x, 0.3)
    factor = torch.tensor(0.3, dtype=torch.float16)  # 0.2998..., as __float2half gives it
    assert got.dtype == torch.float16
    assert torch.equal(got, (x.float() * factor.float()).half())
    # Scaling in float32 by the exact factor rounds differently for some elements: that is the
    # host path's arithmetic, which Horovod's GPU tests (threshold 0) reject.
    assert not torch.equal(got, (x.float() * 0.3).half())


def test_integers_are_scaled_in_float64_and_truncated():
    x = torch.tensor([-7, -1, 0, 7, 2**40], dtype=torch.int64)
    assert device_scale.scaled(x, 0.5).tolist() == [-3, 0, 0, 3, 2**39]
    y = torch.tensor([-7, 7], dtype=torch.int32)
    device_scale.scale_in_place(y, 1.5)
    assert y.tolist() == [-10, 10]


def test_only_scaled_sums_and_averages_of_cuda_tensors_are_taken():
    cpu = torch.ones(3)
    assert not device_scale.applies(cpu, _core.OP_ALLREDUCE, _core.REDUCE_SUM, 2.0, 1.0)
    meta = torch.empty(3, device="meta")  # a non-CPU tensor that needs no GPU here
    assert not device_scale.applies(meta, _core.OP_ALLREDUCE, _core.REDUCE_SUM, 2.0, 1.0)


def test_the_submit_sends_the_prescaled_tensor_unscaled_and_synchronize_postscales(monkeypatch):
    sent = {}

    def fake_submit(op, kind, source, output, name, reduce_op, **rest):
        sent.update(source=source, output=output, rest=rest)
        _handles.track(-999, source, output, op, finish=lambda result: result)
        return -999

    caller = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    handle = device_scale.submit_scaled(fake_submit, _core.OP_ALLREDUCE, "allreduce", caller,
                                        None, "t", _core.REDUCE_SUM, 2.0, 0.5, group=(0, 0))
    try:
        assert sent["rest"]["prescale"] == 1.0 and sent["rest"]["postscale"] == 1.0
        assert sent["source"].tolist() == [2.0, 4.0, 6.0]  # prescaled, a new tensor
        assert caller.tolist() == [1.0, 2.0, 3.0]  # the caller's tensor untouched so far
        reduced = sent["source"] * 2  # what a 2-rank sum would leave in the submitted tensor
        result = _handles._in_flight[handle].finish(reduced)
        # In place: the postscaled result lands in the caller's own tensor.
        assert result is caller and caller.tolist() == [2.0, 4.0, 6.0]  # (2x + 2x) * 0.5
    finally:
        _handles._in_flight.pop(handle, None)
