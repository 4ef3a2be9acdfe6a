#!/usr/bin/env bash
# The C++ suites under sanitizers, each in its own build directory:
#   build/asan  every tests/cpp suite under AddressSanitizer + LeakSanitizer + UBSan;
#   build/tsan  the threaded layers (tests/cpp/core, bootstrap, comm, negotiation) under ThreadSanitizer.
# GCC, the compiler of the normal build: the sanitizer builds then compile exactly what ships,
# with the same warnings, and share the ccache entries' toolchain. (libFuzzer needs clang: see
# scripts/fuzz.sh.) A finding fails the test (-fno-sanitize-recover, halt_on_error) and ctest.
#
# Usage: scripts/sanitizers.sh [asan|tsan]...   (default: both). scripts/test.sh calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/compiler_cache.sh
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
kinds=("$@")
if [ ${#kinds[@]} -eq 0 ]; then kinds=(asan tsan); fi

# Sanitized code runs 2-15x slower, and CI shares two cores: generous per-test limits, so a slow
# test is reported as slow only when it is really stuck.
test_timeout=900

# configure_and_build DIR SANITIZERS TEST_LAYERS "TARGET..."
configure_and_build() {
  local dir=$1 sanitize=$2 layers=$3 target=$4
  local generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  # -O1: the speed the sanitizer authors recommend (-O0 doubles the run time, -O2 the build).
  # -g1: line tables only, enough for the reports' file:line (CMakeLists.txt says why).
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DKOLO_SANITIZE="$sanitize" -DKOLO_TEST_LAYERS="$layers" -DKOLO_TEST_TIMEOUT=$test_timeout \
    -DKOLO_BUILD_PYTHON=OFF -DKOLO_BUILD_TESTS=ON >/dev/null
  local start=$(date +%s)
  cmake --build "$dir" -j "$jobs" --target $target  # several targets: word-split on purpose
  echo "sanitizers: $dir built in $(( $(date +%s) - start )) s"
}

# run_suites DIR [ctest selection...]
run_suites() {
  local dir=$1
  shift
  local start=$(date +%s)
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"
  echo "sanitizers: $dir suites ${*:-} ran in $(( $(date +%s) - start )) s"
}

suppressions="$PWD/scripts/sanitizer-suppressions"
for kind in "${kinds[@]}"; do
  start=$(date +%s)
  case "$kind" in
    asan)
      echo "sanitizers: ASan+UBSan build (build/asan), every C++ suite"
      # The suites, and the launcher that kolorun_e2e_test runs (benches and libkolo.so are not
      # tested by ctest).
      configure_and_build build/asan "address,undefined" "" "kolo_cpp_tests kolorun"
      export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1"
      export LSAN_OPTIONS="suppressions=$suppressions/lsan.supp:print_suppressions=0"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
      KOLORUN_PATH="$PWD/build/asan/kolorun" run_suites build/asan -E MpiBackendUnderMpirun
      # The MPI plugin's ranks run inside Open MPI, whose MCA components keep allocations past
      # MPI_Finalize and are then unloaded, so LeakSanitizer cannot even name their frames in a
      # suppression: that test alone runs without leak detection (ASan and UBSan stay on).
      ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" run_suites build/asan -R MpiBackendUnderMpirun
      ;;
    tsan)
      echo "sanitizers: TSan build (build/tsan), core/bootstrap/comm/negotiation suites"
      configure_and_build build/tsan "thread" "core;bootstrap;comm;negotiation" kolo_cpp_tests
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp:print_suppressions=0"
      run_suites build/tsan
      ;;
    *)
      echo "sanitizers: unknown kind '$kind' (asan or tsan)" >&2
      exit 2
      ;;
  esac
  echo "sanitizers: $kind done in $(( $(date +%s) - start )) s (build + run)"
done
