#!/usr/bin/env bash
# Runs every test: the guard rails on the source (layer check, clang-format, ruff), the C++ suites
# (ctest, on the build that scripts/setup.sh's `pip install .` made) and the Python suites (pytest;
# multi-rank tests start real processes with kolorun -np 2 and -np 3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# Each part's start, with the minutes since the first (CI must finish within 60 minutes).
started=$(date +%s)
part() { echo "test: $* [$(date -u +%T), $((($(date +%s) - started) / 60)) min in]"; }

# Includes against the layer matrix of docs/ARCHITECTURE.md: a second, and needs no build.
part "layer check (scripts/check_layers.py)"
$PYTHON scripts/check_layers.py
# The layout against .clang-format and the Python against ruff's rules: seconds, no build either.
part "lint (scripts/lint.sh: clang-format on C++, ruff on Python)"
bash scripts/lint.sh

build_dir=$(ls -d build/cp*/ 2>/dev/null | head -n 1 || true)
if [ -z "$build_dir" ] || [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
  echo "test: no build directory with C++ tests; run scripts/setup.sh first (a plain" \
       "\`pip install .\` builds no tests)" >&2
  exit 1
fi

# The kolorun that pip installed beside this Python (not a pyenv shim: a shim is a bash script
# that a test running kolorun with PATH=/nonexistent could not start).
scripts_dir=$($PYTHON -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
if [ -x "$scripts_dir/kolorun" ]; then
  KOLORUN_PATH="$scripts_dir/kolorun"
else
  KOLORUN_PATH=$(command -v kolorun)
fi
export KOLORUN_PATH
# The user guide and the developers' pages (MkDocs, a second): --strict fails on a broken link,
# anchor or page missing from the nav; the configuration page's tables come from
# src/base/settings.def and this kolorun's --help (docs/hooks/reference.py).
# Not --quiet: it hides the warnings from --strict's count, and the build then passes anyway.
part "documentation site (mkdocs build --strict into build/site)"
$PYTHON -m mkdocs build --strict
part "C++ suites (ctest in $build_dir, kolorun $KOLORUN_PATH)"
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 300

# The slowest twenty in the log: CI's time (about 50 of its 60 minutes) is mostly these jobs.
part "Python suites (pytest)"
$PYTHON -m pytest -q --durations=20 tests/python

# Fault matrix, soak and load (issue 13): real jobs whose ranks are killed and stopped; prints the
# table of measured detection and exit times.
part "fault matrix, soak and load (pytest tests/faults, namespace cases below)"
# Bounds overrun on a loaded CI machine are printed, not failed (fault_harness.within_bound).
export KOLO_FAULT_BOUNDS=report
$PYTHON -m pytest -q -rs --ignore=tests/faults/netns tests/faults

# Elastic training end to end (issue 11): kolorun --min-np/--max-np/--host-discovery-script jobs
# on fake hosts (127.0.0.N through tests/python/fake_ssh) whose workers are killed, stopped,
# added and removed; the namespace case (a whole host lost) runs with the multi-host suites.
part "elastic training (pytest tests/elastic, namespace case below)"
$PYTHON -m pytest -q -rs --ignore=tests/elastic/netns tests/elastic

# Real multi-host runs: network namespaces joined by a bridge, an sshd in each, kolorun over ssh,
# and the fault cases that need them (a link cut, a remote rank killed or stopped). They need
# root; elsewhere pytest reports them as skipped with the reason (-rs). The namespaces, bridge
# and /etc/hosts lines are machine-wide: one run at a time per machine (flock). Two sessions:
# each builds its own cluster of fake hosts, and one session cannot hold two.
part "multi-host suites (pytest tests/multihost, then tests/faults/netns)"
flock /tmp/kolo-netns.lock $PYTHON -m pytest -q -rs tests/multihost
flock /tmp/kolo-netns.lock $PYTHON -m pytest -q -rs tests/faults/netns
flock /tmp/kolo-netns.lock $PYTHON -m pytest -q -rs tests/elastic/netns

# Hostile input and memory/thread bugs: every decoder of bytes from another process or a file under
# libFuzzer on its seed corpus (20 s each), then the C++ suites under ASan+UBSan and (the threaded
# layers) TSan, each in its own build directory. KOLO_TEST_SANITIZERS=0 skips both (a quick local
# run); CI runs them.
if [ "${KOLO_TEST_SANITIZERS:-1}" != 0 ]; then
  part "fuzz targets (scripts/fuzz.sh, 20 s each)"
  bash scripts/fuzz.sh 20
  part "C++ suites under ASan+UBSan and TSan (scripts/sanitizers.sh)"
  bash scripts/sanitizers.sh
fi
part "done"
