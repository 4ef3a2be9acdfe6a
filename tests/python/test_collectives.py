"""Every collective and dtype on 2 and 3 real processes, with fusion and the cache on and off."""

import pytest

from conftest import run_job


@pytest.mark.parametrize("np_", [2, 3])
def test_collectives_default_settings(np_):
    run_job(np_, "collectives.py", str(np_), timeout=300).assert_ok(np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_collectives_without_fusion_and_cache(np_):
    env = {"KOLO_FUSION_THRESHOLD": "0", "KOLO_CACHE_CAPACITY": "0"}
    run_job(np_, "collectives.py", str(np_), env=env, timeout=300).assert_ok(np_)


def test_collectives_with_horovod_variables_and_tiny_fusion_buffer():
    # HOROVOD_* names are honoured; a 4 KiB threshold forces many groups and oversized tensors.
    env = {"HOROVOD_FUSION_THRESHOLD": "4096", "HOROVOD_CYCLE_TIME": "0.5"}
    run_job(3, "collectives.py", "3", env=env, timeout=300).assert_ok(3)
