#!/usr/bin/env bash
# Runs every test: the C++ suites (ctest, on the build that `pip install .` made) and the Python
# suites (pytest; multi-rank tests start real processes with kolorun -np 2 and -np 3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

build_dir=$(ls -d build/cp*/ 2>/dev/null | head -n 1 || true)
if [ -z "$build_dir" ] || [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
  echo "test: no build directory with tests; run scripts/setup.sh first" >&2
  exit 1
fi
echo "test: C++ suites (ctest in $build_dir)"
KOLORUN_PATH=$(command -v kolorun) ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 300

echo "test: Python suites (pytest)"
$PYTHON -m pytest -q tests/python

# Real multi-host runs: network namespaces joined by a bridge, an sshd in each, kolorun over ssh.
# They need root; elsewhere pytest reports them as skipped with the reason (-rs).
echo "test: multi-host suites (pytest tests/multihost)"
$PYTHON -m pytest -q -rs tests/multihost
