#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (Python 3.11 with pip) for kolo and installs it:
# Debian build libraries, Python build and lint tools, then `pip install .` with the C++ tests
# turned on (a user's plain `pip install .` builds none): they are built in build/<wheel tag>,
# where scripts/test.sh finds them.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
# What the build, the tests and the examples use, nothing else (docs/ARCHITECTURE.md, "What kolo
# writes by hand": no spdlog; the tests use GoogleTest without GoogleMock).
packages=(build-essential cmake ninja-build python3-dev libgtest-dev libcli11-dev libfmt-dev
          libssl-dev libbenchmark-dev dataset-fashion-mnist openmpi-bin libopenmpi-dev
          openssh-client  # kolorun starts ranks on other hosts with the system ssh
          openssh-server iproute2  # tests/multihost: an sshd per network namespace
          clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and clang's sanitizer runtimes
          clang-format  # scripts/lint.sh: Debian 12's clang-format 14 checks the C++ layout
          ccache)  # scripts/compiler_cache.sh: CI's four builds reuse what an earlier run compiled
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
pip_flags=(-q --disable-pip-version-check)
# Debian's own python3 refuses pip installs unless told otherwise (PEP 668); a pyenv or venv
# Python has no such marker.
if [ -f "$($PYTHON -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')/EXTERNALLY-MANAGED" ] \
   && [ -z "${VIRTUAL_ENV:-}" ]; then
  pip_flags+=(--break-system-packages)
fi
# torch 2.13.0's CPU build is what the examples and the torch tests use; mpi4py (built against
# libopenmpi-dev) lets tests/python/test_mpirun.py check hvd.init(comm=MPI.COMM_WORLD); pyyaml
# reads the YAML configs of examples/train.py; filelock is imported by Horovod's elastic MNIST
# example (tests/elastic/test_elastic_examples.py runs it unchanged); ruff (pinned: its rules
# change between versions) checks the Python code (scripts/lint.sh). tensorflow-cpu 2.21.0
# (with Keras 3) and tf-keras 2.21.0 (Keras 2, for TF_USE_LEGACY_KERAS=1) serve kolo.tensorflow and
# its tests; they coexist with torch 2.13.0 and leave numpy at the version torch uses. jax[cpu]
# 0.10.2 is Keras 3's JAX backend (tests/python/test_keras_backends.py trains horovod.keras on
# it); it installs only jax and jaxlib, leaving numpy and ml_dtypes as TensorFlow 2.21 needs them.
$PYTHON -m pip install "${pip_flags[@]}" "scikit-build-core>=0.10" "nanobind>=2.0" \
  numpy pytest "torch==2.13.0" mpi4py pyyaml filelock "ruff==0.17.6" \
  "tensorflow-cpu==2.21.0" "tf-keras==2.21.0" "jax[cpu]==0.10.2"
# MkDocs (pinned: its warnings, which --strict turns into errors, change between versions) builds
# the user guide in docs/ (scripts/test.sh runs `mkdocs build --strict`).
$PYTHON -m pip install "${pip_flags[@]}" "mkdocs==1.6.1"
source scripts/compiler_cache.sh
echo "setup: building and installing kolo with its C++ tests (pip install .)"
$PYTHON -m pip install "${pip_flags[@]}" --no-build-isolation \
  --config-settings=cmake.define.KOLO_BUILD_TESTS=ON .
command -v kolorun >/dev/null || { echo "setup: kolorun is not on PATH after install" >&2; exit 1; }
echo "setup: done ($(kolorun --version 2>/dev/null || echo kolorun))"
