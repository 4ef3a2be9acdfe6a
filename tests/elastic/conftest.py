"""tests/elastic: kolorun's elastic mode end to end (issue 11). Every case runs a real job with a
time limit; hosts are loopback addresses 127.0.0.2... reached through tests/python/fake_ssh (each
a host of its own to kolorun), and in netns/ real network namespaces with sshd."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from elastic_harness import elastic_unsupported_reason  # noqa: E402

pytest.importorskip("torch", reason="scripts/setup.sh installs torch==2.13.0 (CPU)")


@pytest.fixture(scope="session", autouse=True)
def elastic_kolorun():
    reason = elastic_unsupported_reason()
    if reason:
        pytest.skip(reason)
