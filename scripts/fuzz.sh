#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (clang, ASan+UBSan, build/fuzz) and runs each on its seed
# corpus (fuzz/corpus/<target>) for a bounded time. New inputs go to a scratch directory, so the
# committed corpus only changes by hand (scripts/fuzz.sh --seeds rewrites the encoded seeds).
#   scripts/fuzz.sh [--seeds] [seconds per target, default 20] [target ...]
# A crash, leak, sanitizer report, timeout or out-of-memory fails the script; libFuzzer leaves
# the input that did it in build/fuzz/findings (crash-*, leak-*, timeout-*, oom-*).
set -euo pipefail
cd "$(dirname "$0")/.."

make_seeds=0
if [ "${1:-}" = "--seeds" ]; then make_seeds=1; shift; fi
seconds=${1:-20}
shift || true

build=build/fuzz
source scripts/compiler_cache.sh
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DKOLO_BUILD_FUZZERS=ON -DKOLO_BUILD_TESTS=OFF -DKOLO_BUILD_PYTHON=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in fuzz/*_fuzzer.cc; do
    name=$(basename "$source" _fuzzer.cc)
    targets+=("$name")
  done
fi
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  --target fuzz_make_seeds $(printf 'fuzz_%s ' "${targets[@]}")
if [ $make_seeds = 1 ]; then "$build/fuzz/fuzz_make_seeds" fuzz/corpus; fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS="detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
findings="$PWD/$build/findings"
mkdir -p "$findings"
# fuzz_one NAME: runs one target; prints its line, or its log's tail and the failure.
fuzz_one() {
  local name=$1
  mkdir -p "$scratch/$name"
  local log="$scratch/$name.log"
  # -timeout: one input taking this long is a hang (a finding); -rss_limit_mb: a forged length
  # that makes a decoder allocate is a finding too.
  if ! "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$findings/$name-" "$scratch/$name" "fuzz/corpus/$name" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: fuzz_$name FAILED (input saved in $findings)" >&2
    return 1
  fi
  local runs coverage
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  echo "fuzz: fuzz_$name ok: $runs runs in ${seconds} s, $coverage"
}
# One target per core at a time (each libFuzzer run is single-threaded): CI's two cores halve the
# time; every target still gets its full time.
parallel=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
failed=0
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  pids=()
  for name in "${targets[@]:i:parallel}"; do
    fuzz_one "$name" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  if [ $failed != 0 ]; then exit 1; fi
done
