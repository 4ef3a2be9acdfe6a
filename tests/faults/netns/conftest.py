"""The network-namespace fault cases reuse tests/multihost's cluster of fake hosts (its fixtures,
loaded from there under another module name).
Run them in their own pytest session, under `flock /tmp/kolo-netns.lock` (scripts/test.sh does):
the namespaces, bridge and /etc/hosts lines are machine-wide."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

MULTIHOST = Path(__file__).resolve().parents[2] / "multihost"
sys.path.insert(0, str(MULTIHOST))  # its conftest imports `cluster`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fault_harness
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))  # rank_output
_spec = importlib.util.spec_from_file_location("multihost_fixtures", MULTIHOST / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

cluster = _fixtures.cluster
fake_hosts = _fixtures.fake_hosts
