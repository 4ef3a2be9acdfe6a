#!/usr/bin/env bash
# Builds the real Horovod 0.28.1 (CPU: gloo, and MPI when OpenMPI's dev package is
# installed) against torch 2.13.0 in its own venv, outside the repository, so that the
# benches can run it as a peer beside kolo (bench/perop, bench/train_vs_ddp with
# --horovod-python). Not part of CI: it compiles for 20+ minutes on 2 cores.
#
# The venv is made WITHOUT --system-site-packages on purpose: the system Python has kolo
# installed, and kolo installs a `horovod` alias package that would shadow the real one.
#
# Horovod's sources are downloaded and patched in a scratch folder (never committed);
# the patches are the smallest found to build 0.28.1 against torch 2.13 (see README.md).
#
# Usage: bash bench/horovod_reference/build.sh [VENV]   (default ~/.cache/kolo/horovod-0.28.1)
#        HOROVOD_REF_WORK=/tmp/x  scratch folder for the sdist and the build (default mktemp)
set -euo pipefail

VENV=${1:-${HOROVOD_REF_VENV:-$HOME/.cache/kolo/horovod-0.28.1}}
WORK=${HOROVOD_REF_WORK:-$(mktemp -d /tmp/horovod-ref-build.XXXXXX)}
HOROVOD_VERSION=0.28.1
TORCH_VERSION=2.13.0
# The interpreter the venv is made from: any Python 3.11 (torch 2.13's local wheel is cp311).
BASE_PYTHON=${HOROVOD_REF_BASE_PYTHON:-python3}

echo "venv: $VENV   scratch: $WORK"
mkdir -p "$WORK"

# 1. A venv of its own: torch from the local wheel cache, the build's tools from PyPI.
if [ ! -x "$VENV/bin/python" ]; then
  "$BASE_PYTHON" -m venv "$VENV"
fi
"$VENV/bin/pip" install -q "torch==$TORCH_VERSION" cmake numpy psutil cloudpickle pyyaml \
  packaging cffi wheel setuptools
"$VENV/bin/python" -c "import torch; assert torch.__version__.startswith('$TORCH_VERSION'), torch.__version__"

# 2. The sdist, unpacked fresh every time so the patches below apply to pristine sources.
"$VENV/bin/pip" download -q "horovod==$HOROVOD_VERSION" --no-deps --no-binary :all: -d "$WORK"
rm -rf "$WORK/horovod-$HOROVOD_VERSION"
tar -xzf "$WORK/horovod-$HOROVOD_VERSION.tar.gz" -C "$WORK"
SRC="$WORK/horovod-$HOROVOD_VERSION"

# 3. Patches for torch 2.13 (each one found by a failed build; see README.md).
# 3a. torch 2.x headers need C++17; Horovod pins C++14 for the core and the torch module.
sed -i 's/set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD 17)/' \
  "$SRC/CMakeLists.txt" "$SRC/horovod/torch/CMakeLists.txt"
grep -q 'CMAKE_CXX_STANDARD 17' "$SRC/horovod/torch/CMakeLists.txt"
# That is the only patch 0.28.1 needs for torch 2.13 CPU here: its torch adapter (mpi_ops_v2.cc,
# adapter_v2.cc) uses no API that torch has removed since.

# 4. Build: CPU collectives, gloo always, MPI when mpicc is there; 2 jobs, niced (the
# machine is shared). CMake 4 refuses the bundled gloo/flatbuffers' cmake_minimum_required
# 2.8, so the policy floor is raised to 3.5 for the whole configure (an environment variable:
# no patch). HOROVOD_CPU_OPERATIONS is left to Horovod's documented default unless set: MPI
# when MPI is built in, else gloo; at run time the controller decides (horovodrun --gloo runs
# gloo's CPU ops, as MPI is then not initialised; --mpi runs MPI's).
export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
export HOROVOD_WITH_GLOO=1
if command -v mpicc >/dev/null 2>&1; then
  export HOROVOD_WITH_MPI=1
else
  export HOROVOD_WITHOUT_MPI=1
fi
export MAKEFLAGS=-j2 CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_POLICY_VERSION_MINIMUM=3.5
export HOROVOD_CMAKE="$VENV/bin/cmake"
cd "$SRC"
echo "building (log: $WORK/build.log)"
if ! nice -n 10 "$VENV/bin/pip" install -v --no-build-isolation --no-deps . >"$WORK/build.log" 2>&1; then
  grep -E -m 20 'error:|Error' "$WORK/build.log" >&2 || true
  echo "build failed: see $WORK/build.log" >&2
  exit 1
fi
"$VENV/bin/pip" install -q cloudpickle psutil pyyaml packaging

# 5. Check: the real Horovod (not kolo's alias) with torch, MPI and gloo built in.
cd /
"$VENV/bin/python" - <<'PY'
import importlib.util
import horovod, horovod.torch as hvd
assert horovod.__version__ == "0.28.1", horovod.__file__
# Not kolo's alias package: no kolo in this venv, and Horovod's compiled torch ops are there (the
# venv's own path, ~/.cache/kolo/..., may well contain "kolo").
assert importlib.util.find_spec("kolo") is None, "kolo is importable in the Horovod venv"
assert importlib.util.find_spec("horovod.torch.mpi_lib_v2") is not None, horovod.__file__
print("horovod", horovod.__version__, "from", horovod.__file__)
print("gloo built:", hvd.gloo_built(), " mpi built:", hvd.mpi_built())
PY
echo "built: $VENV (check it: bash bench/horovod_reference/check.sh $VENV)"
