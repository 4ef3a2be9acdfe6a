"""One Keras 3 script on any Keras backend (issue 24, point 4): horovod.keras's
DistributedOptimizer and callbacks train under KERAS_BACKEND=jax and KERAS_BACKEND=torch, and
the weights stay equal across ranks (workers/keras_any_backend.py says what each rank checks).
The TensorFlow backend's runs are in test_tensorflow_keras.py."""

import importlib.util

import pytest

from conftest import run_job

pytest.importorskip("keras", reason="scripts/setup.sh installs Keras 3 (with tensorflow-cpu)")


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="Keras 3's JAX backend needs jax: scripts/setup.sh installs "
                           "jax[cpu]==0.10.2")
@pytest.mark.parametrize("np_", [2, 3])
def test_keras_on_jax_trains_in_step(np_):
    run_job(np_, "keras_any_backend.py", env={"KERAS_BACKEND": "jax"},
            timeout=240).assert_ok(np_)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="scripts/setup.sh installs torch==2.13.0")
def test_keras_on_torch_trains_in_step():
    # One intra-op thread per rank: torch's default of one per core only fights the other rank.
    run_job(2, "keras_any_backend.py", env={"KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1"},
            timeout=240).assert_ok(2)
