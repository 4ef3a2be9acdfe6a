#!/usr/bin/env bash
# Builds kolo in build/NAME and stages a runnable copy without touching site-packages, so several
# people (or checkouts) can work side by side:
#   eval "$(bash scripts/dev_stage.sh NAME)"   # builds, then sets PYTHONPATH and PATH
# Python files are symlinked, so edits under python/ take effect without rebuilding.
set -euo pipefail
name=${1:?usage: dev_stage.sh NAME}
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build/$name"
PYTHON=${PYTHON:-python3}
# ccache lets several checkouts of the same tree share compiled objects (2 cores go a long way).
cd "$top"
source scripts/compiler_cache.sh
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$top" -B "$build" -G Ninja -DPython_EXECUTABLE="$(command -v "$PYTHON")" \
    -DKOLO_BUILD_TESTS=ON >&2
fi
cmake --build "$build" -j2 >&2
stage="$build/stage"
rm -rf "$stage"
mkdir -p "$stage/bin"
for package in kolo horovod; do
  mkdir -p "$stage/$package"
  for entry in "$top/python/$package"/*; do
    case "$entry" in *.so) continue ;; esac
    ln -s "$entry" "$stage/$package/"
  done
done
ln -s "$build"/_core*.so "$build"/libkolo.so "$build"/libkolo_tfop.so "$stage/kolo/"
ln -s "$build/kolorun" "$stage/bin/kolorun"
ln -s "$build/kolorun" "$stage/bin/horovodrun"
[ -x "$build/kolo-bench" ] && ln -s "$build/kolo-bench" "$stage/bin/kolo-bench"
echo "export PYTHONPATH=$stage\${PYTHONPATH:+:\$PYTHONPATH} PATH=$stage/bin:\$PATH"
