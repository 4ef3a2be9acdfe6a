#!/usr/bin/env bash
# kolo's checks on a lent GPU machine (issue 23, point 7): build kolo there from the working tree,
# then, within about 8 minutes, write to $OUT what only a GPU can show. No device is needed to
# prepare it, and nothing here runs in CI.
#
#   1. Here, once per session:  bash scripts/device_check.sh --prepare
#      fills .device/ (git-ignored, a few MiB): the Debian packages the build needs that the
#      device image may lack (fmt, CLI11, OpenSSL's headers, GoogleTest for the one C++ test that
#      needs a GPU) unpacked, the `mock` wheel Horovod's
#      tests import, and Horovod's own test_torch.py, test/utils/common.py and
#      pytorch_synthetic_benchmark.py copied from $HOROVOD_SRC (default /tmp/horovod-src: a
#      checkout of horovod/horovod kept outside the repository; never committed).
#   2. The device tool's run, from the repository root:
#      command "bash scripts/device_check.sh", carry [".device"], timeout_s 560
#
# What comes back under $OUT (at most 8 files): summary.txt (the environment, what kolo found,
# which path the torch front end takes per op and one NCCL result, pass/fail counts, img/sec and
# ratios), nccl_on_device.txt (the NCCL backend's collectives on
# the GPU with torch's NCCL: tests/cpp/gpu/nccl_on_device_test.cc), test_gpu_cuda.txt, test_torch_np1.txt, test_torch_np2.txt,
# bench.txt, build.txt. docs/GPU.md keeps each run's figures with the device's name and the date.
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
  # Python 3.12's headers, used there only when the image has none (an extension module needs
  # the headers of its minor version alone, not a library).
  headers=${PYTHON312_INCLUDE:-$(python3.12 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)}
  if [ -n "$headers" ] && [ -f "$headers/Python.h" ]; then
    mkdir -p .device/python-include && cp -r "$headers" .device/python-include/python3.12
  else
    echo "no Python 3.12 headers found here (set PYTHON312_INCLUDE); the device's own are needed" >&2
  fi
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
say() { echo "$*" | tee -a "$summary"; }
# Seconds left of the 8 minutes (480 s), for `timeout`: a step never outlives the budget.
left() { echo $((480 - ($(date +%s) - started))); }
step_timeout() {  # the smaller of $1 and what is left (at least 5 s, so the step reports itself)
  local want=$1 remaining
  remaining=$(left)
  [ "$remaining" -lt "$want" ] && want=$remaining
  [ "$want" -lt 5 ] && want=5
  echo "$want"
}

say "== device_check $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
say "$(nvidia-smi -L 2>&1 | head -2)"
say "$(python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1)"
say "cores $(nproc)"

# ---- build (the image has cmake, ninja and nanobind; .device/deps has the rest) ----
deps=$top/.device/deps/usr
export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
export CPATH=$deps/include:$deps/include/x86_64-linux-gnu${CPATH:+:$CPATH}
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
build=build/device
python_headers=()
if ! python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    && [ -f .device/python-include/python3.12/Python.h ]; then
  python_headers=(-DPython_INCLUDE_DIR="$top/.device/python-include/python3.12")
fi
{
  cmake -S . -B "$build" -G Ninja -DKOLO_BUILD_TESTS=OFF -DKOLO_WERROR=OFF \
    -DPython_EXECUTABLE="$(command -v python3)" "${python_headers[@]}" &&
    timeout "$(step_timeout 150)" cmake --build "$build" -j "$(nproc)" --target _core kolorun kolo-bench
} >"$OUT/build.txt" 2>&1
if [ $? -ne 0 ]; then
  say "BUILD FAILED after $(( $(date +%s) - started )) s: see build.txt"
  exit 1
fi
stage=$build/stage
rm -rf "$stage" && mkdir -p "$stage/bin"
for package in kolo horovod; do
  mkdir -p "$stage/$package"
  for entry in "$top/python/$package"/*; do ln -s "$entry" "$stage/$package/"; done
done
ln -s "$top/$build"/_core*.so "$top/$build/libkolo.so" "$stage/kolo/"
for program in kolorun horovodrun; do ln -s "$top/$build/kolorun" "$stage/bin/$program"; done
ln -s "$top/$build/kolo-bench" "$stage/bin/kolo-bench"
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device/wheels/*.whl \
  >>"$OUT/build.txt" 2>&1
export PYTHONPATH=$top/$stage:/tmp/device-site${PYTHONPATH:+:$PYTHONPATH}
export PATH=$top/$stage/bin:$PATH PYTHONUNBUFFERED=1
say "built in $(( $(date +%s) - started )) s"

# ---- what kolo finds in a process that imported torch ----
say "$(python3 -c 'import torch, kolo._core as c, horovod.torch as hvd
print("nccl:", c.nccl_status()["describe"]); print("cuda:", c.cuda_status()["describe"])
print("nccl_built", hvd.nccl_built(), "cuda_built", hvd.cuda_built())' 2>&1)"
say "$(kolorun --check-build 2>&1 | grep -E 'NCCL|PyTorch')"

# ---- the torch front end on the NCCL path: which path each op takes, and a result (np 1) ----
say "$(timeout "$(step_timeout 60)" kolorun -np 1 python3 -c 'import torch, horovod.torch as hvd
from kolo import _core
from kolo.torch import nccl_submit, staging
hvd.init(); torch.cuda.set_device(hvd.local_rank())
x = torch.arange(1024.0, device="cuda")
y = hvd.allreduce(x, op=hvd.Sum, name="probe")
w = hvd.broadcast(x + 1, root_rank=0, name="probe.b")
m = x.reshape(256, 4)
g = hvd.allgather(m, name="probe.ag")
a, s = hvd.alltoall(m, splits=torch.tensor([256]), name="probe.a2a")
r = hvd.reducescatter(m, op=hvd.Sum, name="probe.rs")
gg = hvd.grouped_allgather([m, m.double()], name="probe.gag")
gr = hvd.grouped_reducescatter([m, m.double()], op=hvd.Sum, name="probe.grs")
print("front end:", {op: c.path for op, c in staging._choices.get("cuda", {}).items()})
print("to NCCL:", {n: nccl_submit.takes(m, op, hvd.Sum) for n, op in (("allgather", _core.OP_ALLGATHER),
      ("alltoall", _core.OP_ALLTOALL), ("reducescatter", _core.OP_REDUCESCATTER))})
print("allreduce on", y.device, "right:", torch.equal(y.cpu(), x.cpu() * hvd.size()),
      "broadcast right:", torch.equal(w.cpu(), x.cpu() + 1))
print("allgather/alltoall/reducescatter on", g.device, a.device, r.device, "right:",
      torch.equal(g.cpu(), m.cpu()), torch.equal(a.cpu(), m.cpu()) and s.tolist() == [256],
      torch.equal(r.cpu(), m.cpu()), "grouped right:",
      all(torch.equal(o.cpu(), t.cpu()) for o, t in zip(gg + gr, [m, m.double()] * 2)))' 2>&1 | tail -6)"

# ---- the NCCL backend's collectives on this GPU through torch's own libcudart and libnccl ----
nvidia=$(python3 -c 'import os, nvidia; print(os.path.abspath(list(nvidia.__path__)[0]))' 2>/dev/null)
cudart=$(find "${nvidia:-/nonexistent}" -name 'libcudart.so.1*' 2>/dev/null | sort | tail -1)
nccl=$(find "${nvidia:-/nonexistent}" -name 'libnccl.so.2' 2>/dev/null | head -1)
{
  cmake -S . -B build/device-tests -G Ninja -DKOLO_BUILD_TESTS=ON -DKOLO_TEST_LAYERS=gpu \
    -DKOLO_BUILD_PYTHON=OFF -DKOLO_WERROR=OFF &&
    timeout "$(step_timeout 60)" cmake --build build/device-tests -j "$(nproc)" \
      --target nccl_on_device_test &&
    KOLO_TEST_CUDART=$cudart KOLO_NCCL_LIBRARY=$nccl timeout "$(step_timeout 60)" \
      build/device-tests/tests/cpp/nccl_on_device_test
} >"$OUT/nccl_on_device.txt" 2>&1
rc=$?
log=$OUT/nccl_on_device.txt
say "nccl_on_device_test (cudart ${cudart:-none}, nccl ${nccl:-none}): rc $rc, $(grep -cE '^\[ +OK \] NcclOnDevice' "$log") passed, $(grep -cE '^\[  FAILED  \] NcclOnDevice.* \(' "$log") failed, $(grep -cE '^\[  SKIPPED \] NcclOnDevice.* \(' "$log") skipped"

# ---- kolo's own GPU tests (CUDA tensors, every op and dtype against the CPU, np 1 and 2 on one GPU) ----
KOLORUN_PATH=$(command -v kolorun) timeout "$(step_timeout 120)" python3 -m pytest -q -rA \
  -p no:cacheprovider tests/python/test_gpu_cuda.py tests/python/test_gpu_ops.py \
  >"$OUT/test_gpu_cuda.txt" 2>&1
say "tests/python/test_gpu_cuda.py, test_gpu_ops.py: rc $? $(tail -1 "$OUT/test_gpu_cuda.txt")"

# ---- Horovod's test_torch.py: np 1 (one GPU), np 2 as two one-slot hosts sharing it ----
hvd_tests() {  # $1: np, $2: output file, $3...: launcher arguments
  local np=$1 out=$2
  shift 2
  (cd .device/horovod/test/parallel &&
    PYTHONPATH=../utils:$PYTHONPATH timeout "$(step_timeout 110)" \
      kolorun -np "$np" "$@" python3 -m pytest -q -rA -p no:cacheprovider test_torch.py) \
    >"$OUT/$out" 2>&1
  # pytest -rA's summary lines, counted over every rank (kolorun may prefix each line)
  say "test_torch.py np $np: rc $? $(grep -cE 'PASSED test_torch' "$OUT/$out") passed, $(grep -cE '(FAILED|ERROR) test_torch' "$OUT/$out") failed, $(grep -cE 'SKIPPED \[' "$OUT/$out") skipped (lines of all ranks)"
}
hvd_tests 1 test_torch_np1.txt
hvd_tests 2 test_torch_np2.txt -H localhost:1,127.0.0.1:1

# ---- the synthetic benchmark (resnet50) and its peers ----
bench=$OUT/bench.txt
: >"$bench"
benchmark=.device/horovod/examples/pytorch/pytorch_synthetic_benchmark.py
short=(--num-warmup-batches 5 --num-batches-per-iter 10 --num-iters 5)
run_bench() {  # $1: label, then the command
  local label=$1
  shift
  echo "== $label: $*" >>"$bench"
  timeout "$(step_timeout 75)" "$@" >>"$bench.part" 2>&1
  local rc=$?
  cat "$bench.part" >>"$bench"
  local total
  total=$(grep -oE 'Total img/sec on [0-9]+ [CG]PU\(s\): [0-9.]+' "$bench.part" | grep -oE '[0-9.]+$')
  rm -f "$bench.part"
  say "bench $label: ${total:-none} img/sec (rc $rc)"
  eval "total_${label//[^a-z0-9]/_}=${total:-0}"
}
run_bench torch_np1 python3 bench/gpu/torch_synthetic.py --mode plain "${short[@]}"
run_bench kolo_np1 kolorun -np 1 python3 "$benchmark" "${short[@]}"
run_bench kolo_np2_async kolorun -np 2 -H localhost:1,127.0.0.1:1 python3 "$benchmark" "${short[@]}"
run_bench kolo_np2_staging env KOLO_GPU_OPERATIONS=STAGING \
  kolorun -np 2 -H localhost:1,127.0.0.1:1 python3 "$benchmark" "${short[@]}"
run_bench ddp_gloo_np2 torchrun --standalone --nproc_per_node 2 bench/gpu/torch_synthetic.py \
  --mode ddp --backend gloo "${short[@]}"
ratio() { python3 -c "a, b = float('$1'), float('$2'); print(f'{a / b:.3f}' if b else 'n/a')"; }
say "kolo np1 / plain torch: $(ratio "$total_kolo_np1" "$total_torch_np1") (goal >= 0.98)"
say "kolo np2 async / DDP gloo np2: $(ratio "$total_kolo_np2_async" "$total_ddp_gloo_np2") (goal >= 1.5)"
say "kolo np2 async / kolo np2 blocking staging: $(ratio "$total_kolo_np2_async" "$total_kolo_np2_staging")"

# ---- kolo on the machine's cores (Open MPI is not carried: kolo alone, no ratio) ----
for np in 4 8 16; do
  [ "$(left)" -lt 20 ] && { say "kolo-bench np $np: skipped, out of time"; continue; }
  line=$(timeout "$(step_timeout 30)" kolorun -np "$np" kolo-bench -b 1M -e 1M 2>&1 | grep -E '^ +1048576' | head -1)
  say "kolo-bench allreduce 1 MiB np $np: ${line:-no result}"
done
say "== done in $(( $(date +%s) - started )) s"
