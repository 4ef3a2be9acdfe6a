"""The namespace elastic case reuses tests/multihost's cluster of fake hosts (its fixtures, loaded
under another module name, as tests/faults/netns does). Run it in its own pytest session under
`flock /tmp/kolo-netns.lock` (scripts/test.sh does): the namespaces are machine-wide."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

MULTIHOST = Path(__file__).resolve().parents[2] / "multihost"
sys.path.insert(0, str(MULTIHOST))  # its conftest imports `cluster`
_spec = importlib.util.spec_from_file_location("multihost_fixtures_elastic",
                                               MULTIHOST / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

cluster = _fixtures.cluster
fake_hosts = _fixtures.fake_hosts
