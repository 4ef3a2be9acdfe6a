"""horovod.tensorflow on kolo (issue 24): every collective eagerly and inside tf.function with
Horovod's gradients, process sets, object helpers, DistributedGradientTape, the errors of a
mismatch and of XLA; on 2 and 3 ranks under kolorun."""

import pytest

from conftest import run_job

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu==2.21.0")


@pytest.mark.parametrize("np_", [2, 3])
def test_tensorflow_collectives(np_):
    run_job(np_, "tensorflow_ops.py", timeout=300).assert_ok(np_)
