#!/usr/bin/env bash
# The platform guides' launcher for examples/train.py (TopsDL / Volcano, OpenMPI + Horovod):
#
#   examples/run_training.sh --config examples/configs/fashion_cnn.py --work-dir work_dirs/cnn \
#       [--amp] [--auto-scale-lr] [--resume work_dirs/cnn/epoch_2.pth] [--seed N] \
#       [--slots-per-node 8] [--total-processes 32] [--launcher mpirun|kolorun] [--dry-run] \
#       [-- more train.py arguments, e.g. --cfg-options schedule.epochs=5]
#
# It writes the MPI hostfile as the guides do: "localhost slots=N", then every line of the Volcano
# worker list (/etc/volcano/worker.host, when present) with " slots=N" appended (blank lines and
# # comments skipped). --total-processes defaults to slots x hosts. Then it prints and runs
#   mpirun --hostfile /etc/mpi/hostfile --allow-run-as-root -mca btl ^openib -np N \
#          -bind-to none -map-by slot -x PATH ... python3 train.py ...
# or, when mpirun is not installed, `kolorun -np N --hostfile ... python3 train.py ...`.
#
# Environment: WORKER_HOST_FILE (default /etc/volcano/worker.host), MPI_HOSTFILE (default
# /etc/mpi/hostfile), MPIRUN (default mpirun), KOLORUN (default kolorun), TRAIN_PYTHON (default
# python3), TRAIN_SCRIPT (default train.py beside this script). mpirun forwards PATH,
# LD_LIBRARY_PATH, PYTHONPATH, OMP_NUM_THREADS and every KOLO_* / HOROVOD_* variable that is set.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
worker_host_file=${WORKER_HOST_FILE:-/etc/volcano/worker.host}
mpi_hostfile=${MPI_HOSTFILE:-/etc/mpi/hostfile}
mpirun_bin=${MPIRUN:-mpirun}
kolorun_bin=${KOLORUN:-kolorun}
python_bin=${TRAIN_PYTHON:-python3}
train_script=${TRAIN_SCRIPT:-$here/train.py}

usage() { sed -n '2,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
die() { echo "run_training.sh: $*" >&2; exit 2; }
needs_value() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }
is_count() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive whole number, not '$2'"; }

slots=8
total=""
launcher=auto
dry_run=0
train_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config|--work-dir|--resume|--seed)
      needs_value "$@"; train_args+=("$1" "$2"); shift 2 ;;
    --amp|--auto-scale-lr)
      train_args+=("$1"); shift ;;
    --slots-per-node)
      needs_value "$@"; is_count "$1" "$2"; slots=$2; shift 2 ;;
    --total-processes)
      needs_value "$@"; is_count "$1" "$2"; total=$2; shift 2 ;;
    --launcher)
      needs_value "$@"; launcher=$2; shift 2
      [[ "$launcher" =~ ^(auto|mpirun|kolorun)$ ]] || die "--launcher is mpirun or kolorun" ;;
    --dry-run)
      dry_run=1; shift ;;
    -h|--help)
      usage; exit 0 ;;
    --)
      shift; train_args+=("$@"); break ;;
    *)
      die "unknown option '$1' (train.py's other flags go after --; see --help)" ;;
  esac
done

# The hostfile, exactly as the guides build it.
mkdir -p "$(dirname "$mpi_hostfile")" 2>/dev/null \
  || die "cannot create $(dirname "$mpi_hostfile") (set MPI_HOSTFILE to a writable path)"
echo "localhost slots=$slots" > "$mpi_hostfile" \
  || die "cannot write $mpi_hostfile (set MPI_HOSTFILE to a writable path)"
hosts=1
if [ -f "$worker_host_file" ]; then
  sed -e '/^[[:space:]]*$/d' -e '/^[[:space:]]*#/d' -e "s/[[:space:]]*$/ slots=$slots/" \
      "$worker_host_file" >> "$mpi_hostfile"
  hosts=$(grep -c . "$mpi_hostfile")
  echo "run_training.sh: $((hosts - 1)) worker(s) from $worker_host_file"
fi
total=${total:-$((slots * hosts))}
if [ "$total" -gt $((slots * hosts)) ]; then
  die "--total-processes $total is more than the $((slots * hosts)) slots of $mpi_hostfile"
fi

if [ "$launcher" = auto ]; then
  if command -v "$mpirun_bin" >/dev/null 2>&1; then launcher=mpirun; else launcher=kolorun; fi
fi
if [ "$launcher" = mpirun ]; then
  cmd=("$mpirun_bin" --hostfile "$mpi_hostfile" --allow-run-as-root -mca btl '^openib'
       -np "$total" -bind-to none -map-by slot)
  for name in PATH LD_LIBRARY_PATH PYTHONPATH OMP_NUM_THREADS \
              $(compgen -e | grep -E '^(KOLO|HOROVOD)_' || true); do
    if [ -n "${!name+set}" ]; then cmd+=(-x "$name"); fi
  done
else
  cmd=("$kolorun_bin" -np "$total" --hostfile "$mpi_hostfile")
fi
cmd+=("$python_bin" "$train_script" "${train_args[@]}")

echo "run_training.sh: hostfile $mpi_hostfile:"
sed 's/^/  /' "$mpi_hostfile"
printed=$(printf '%q ' "${cmd[@]}")
echo "run_training.sh: ${printed% }"
if [ "$dry_run" = 1 ]; then exit 0; fi
exec "${cmd[@]}"
