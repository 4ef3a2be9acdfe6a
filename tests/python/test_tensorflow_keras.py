"""horovod.tensorflow.keras on kolo (issue 24): model.fit with DistributedOptimizer and the
callbacks, local gradient aggregation (and the optimizer's Horovod internals: _compute_gradients,
_agg_helper), load_model and the elastic KerasState, on Keras 3 at 2
and 3 ranks, and on tf-keras (TF_USE_LEGACY_KERAS=1) at 2."""

import importlib.util

import pytest

from conftest import run_job

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu==2.21.0")


@pytest.mark.parametrize("np_", [2, 3])
def test_keras3_fit_callbacks_and_state(np_):
    run_job(np_, "tensorflow_keras.py", timeout=300).assert_ok(np_)


@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None,
                    reason="scripts/setup.sh installs tf-keras==2.21.0")
def test_tf_keras_fit_callbacks_and_state():
    run_job(2, "tensorflow_keras.py", env={"TF_USE_LEGACY_KERAS": "1"},
            timeout=300).assert_ok(2)
