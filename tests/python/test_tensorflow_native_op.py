"""kolo's compiled TensorFlow graph op (issue 24 point 8; src/tfop/): used inside tf.function,
same results and error classes as the numpy_function path, and that path as the fallback when
the op library cannot load; on 2 and 3 ranks under kolorun."""

import pytest

from conftest import run_job

pytest.importorskip("tensorflow", reason="scripts/setup.sh installs tensorflow-cpu==2.21.0")


@pytest.mark.parametrize("np_", [2, 3])
def test_native_op(np_):
    run_job(np_, "tensorflow_native_op.py", timeout=300).assert_ok(np_)


def test_fallback_when_the_library_cannot_load():
    run_job(2, "tensorflow_native_op.py", "--unloadable", timeout=300).assert_ok(2)
