"""tests/faults: the harness lives in fault_harness.py (importable from the namespace cases in
netns/ too); this prints the table of measured times at the end of the session."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # rank_output
from fault_harness import print_table  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    print_table(terminalreporter.write_line)
