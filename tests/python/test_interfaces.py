"""Interface selection on one host: ranks publish and use only the named interfaces, and a name
the host does not have stops every rank with an error naming it."""

import re

import pytest

from conftest import run_job


@pytest.mark.parametrize("np_", [2, 3])
def test_ranks_publish_only_the_named_interface_and_reach_each_other_there(np_):
    result = run_job(np_, "allreduce_once.py", env={"KOLO_IFACE": "lo", "KOLO_LOG_LEVEL": "debug"})
    result.assert_ok(np_)
    published = re.findall(r"listening at (\S+) \(host", result.output)
    assert len(published) == np_, result.output
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", text) for text in published), published
    reached = re.findall(r"reached rank \d+ on host '[^']*' at (\S+) \(address 1 of 1\)",
                         result.output)
    assert len(reached) == np_ * (np_ - 1) // 2, result.output
    assert all(text.startswith("127.0.0.1:") for text in reached), reached


def test_horovod_gloo_iface_naming_a_missing_interface_fails_every_rank_naming_it():
    result = run_job(2, "allreduce_once.py", env={"HOROVOD_GLOO_IFACE": "kolo-no-such0"},
                     timeout=60)
    assert result.returncode != 0, result.output
    for rank in range(2):
        assert any("network interface 'kolo-no-such0'" in line and "available: " in line
                   and "lo (127.0.0.1)" in line for line in result.lines_of(rank, "stderr")), \
            result.output
