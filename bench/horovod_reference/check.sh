#!/usr/bin/env bash
# Checks the real Horovod that build.sh made: a correct allreduce (sum and average, named and
# not) under horovodrun with each controller, then the PyTorch synthetic benchmark (this
# repository's examples/pytorch_synthetic_benchmark.py, Horovod's example rewritten for CPU,
# which imports horovod.torch only) trains under it.
#
# Usage: bash bench/horovod_reference/check.sh [VENV]   (default ~/.cache/kolo/horovod-0.28.1)
set -euo pipefail
VENV=${1:-${HOROVOD_REF_VENV:-$HOME/.cache/kolo/horovod-0.28.1}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN="$VENV/bin"
# Nothing of this project's venv may leak in: `horovod` must be Horovod's own.
run() { env -u PYTHONPATH -u VIRTUAL_ENV PATH="$BIN:$PATH" timeout 300 "$BIN/horovodrun" "$@"; }

for controller in gloo mpi; do
  if [ "$controller" = mpi ] && ! "$BIN/python" -c 'import horovod.torch as h; assert h.mpi_built()'; then
    echo "check: MPI not built in, skipping horovodrun --mpi"; continue
  fi
  run -np 2 -H localhost:2 "--$controller" "$BIN/python" -c '
import importlib.util
import torch
import horovod, horovod.torch as hvd
assert importlib.util.find_spec("kolo") is None, "kolo is importable: not the real Horovod"
hvd.init()
t = torch.arange(4, dtype=torch.float32) * (hvd.rank() + 1)
total = hvd.allreduce(t, op=hvd.Sum, name="check.sum")
mean = hvd.allreduce(t)
assert torch.equal(total, torch.arange(4.0) * 3), total
assert torch.allclose(mean, torch.arange(4.0) * 1.5), mean
if hvd.rank() == 0:
    print("allreduce ok:", horovod.__version__, horovod.__file__, total.tolist(), mean.tolist())
hvd.shutdown()'
  echo "check: horovodrun --$controller allreduce ok"
done

run -np 2 -H localhost:2 --gloo "$BIN/python" "$ROOT/examples/pytorch_synthetic_benchmark.py" \
  --model cnn --num-iters 3 --num-batches-per-iter 5 --num-warmup-batches 2
echo "check: synthetic benchmark ok"
