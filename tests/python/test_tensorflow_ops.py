"""horovod.tensorflow on kolo (issue 24): every collective eagerly and inside tf.function with
Horovod's gradients, process sets, object helpers, DistributedGradientTape, the errors of a
mismatch and of XLA; on 2 and 3 ranks under kolorun."""

import pytest

from conftest import run_job

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu==2.21.0")


@pytest.mark.parametrize("np_", [2, 3])
def test_tensorflow_collectives(np_):
    run_job(np_, "tensorflow_ops.py", timeout=300).assert_ok(np_)


@pytest.mark.parametrize("elastic", ["0", "1"])
def test_an_elastic_graph_reduces_its_gradients_in_one_batch(elastic):
    # The tf.cond of an elastic job's graph holds the same one batch as a plain graph.
    result = run_job(2, "tensorflow_elastic_graph_ops.py", timeout=120,
                     env={"HOROVOD_ELASTIC": elastic, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.output
    for rank in (0, 1):
        assert "collectives 1" in result.lines_of(rank), result.output
