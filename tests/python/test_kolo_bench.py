"""kolo-bench in real processes: every collective at np 2 and np 3 (one host, so allreduce,
allgather, broadcast, reducescatter and alltoall go through the host's shared-memory arena) checks
its results against the locally folded reference, and bench/compare/compare.py reads its table
with the sizes the MPI and gloo peers use. A correctness check of the benchmark and the arena
paths; no timing is asserted."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from conftest import kolorun_path, run_command

COMPARE = Path(__file__).resolve().parents[2] / "bench" / "compare" / "compare.py"


def load_compare():
    spec = importlib.util.spec_from_file_location("kolo_bench_compare", COMPARE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kolo_bench_path() -> str:
    beside = Path(kolorun_path()).parent / "kolo-bench"
    if beside.is_file():
        return str(beside)
    found = shutil.which("kolo-bench")
    if found is None:
        pytest.fail("kolo-bench is not installed next to kolorun nor on PATH")
    return found


@pytest.mark.parametrize("np_", [2, 3])
def test_every_collective_is_correct_and_sized_as_the_peers(np_: int) -> None:
    # Up to 4 MiB: several arena steps of 1 MiB; sizes not divisible by 3 at np 3.
    result = run_command([kolorun_path(), "-np", str(np_), kolo_bench_path(), "-t", "all",
                          "-b", "8", "-e", "4M", "-f", "16", "-n", "3", "-w", "1"], timeout=300)
    assert result.returncode == 0, result.output
    assert "Out of bounds values : 0 OK" in result.output, result.output
    compare = load_compare()
    rows = compare.table_rows(result.output)
    for collective in compare.COLLECTIVES:
        sizes = sorted(size for c, size in rows if c == collective)
        whole = collective in ("allreduce", "broadcast")
        # The peers' rule: whole float32 elements per rank, at least one.
        want = [(b // 4 if whole else max(1, b // 4 // np_) * np_) * 4
                for b in (8, 128, 2048, 32768, 524288, 4 << 20)]
        assert sizes == want, f"{collective}: {sizes}\n{result.output}"
        assert all(rows[(collective, size)][1] == 0 for size in sizes), result.output


@pytest.mark.parametrize("algorithm,shm_disable", [("ring", "1"), ("recursive_doubling", "1"),
                                                   ("halving_doubling", "1"),
                                                   ("shared_memory", "0")])
def test_a_forced_allreduce_algorithm_is_correct_at_np_3(algorithm: str, shm_disable: str) -> None:
    # bench/scaling fits each algorithm from these runs (-a); sizes not divisible by 3 (8 B: fewer
    # elements than ranks; halving-doubling at np 3 folds rank 0 into rank 1 first).
    result = run_command([kolorun_path(), "-np", "3", kolo_bench_path(), "-t", "allreduce",
                          "-a", algorithm, "-b", "8", "-e", "1M", "-f", "32", "-n", "2", "-w", "1"],
                         env={"KOLO_SHM_DISABLE": shm_disable}, timeout=300)
    assert result.returncode == 0, result.output
    assert "Out of bounds values : 0 OK" in result.output, result.output
    assert result.output.count("float32     sum") == 5, result.output  # 8 B .. 1 MiB by 32


def test_an_unknown_allreduce_algorithm_is_an_error_naming_it_and_the_choices() -> None:
    result = run_command([kolorun_path(), "-np", "2", kolo_bench_path(), "-a", "tree"],
                         timeout=120)
    assert result.returncode != 0
    assert "unknown allreduce algorithm 'tree'" in result.output, result.output
    assert "ring|recursive_doubling|halving_doubling|shared_memory|hierarchical" in result.output, \
        result.output


@pytest.mark.parametrize("algorithm", ["ring", "doubling", "bruck"])
def test_a_forced_allgather_algorithm_is_correct_at_np_3(algorithm: str) -> None:
    # bench/scaling/allgather_algorithms.py compares them (-g); np 3 is no power of two (doubling
    # folds rank 0 in, Bruck's last step wraps).
    result = run_command([kolorun_path(), "-np", "3", kolo_bench_path(), "-t", "allgather",
                          "-g", algorithm, "-b", "8", "-e", "1M", "-f", "32", "-n", "2", "-w", "1"],
                         env={"KOLO_SHM_DISABLE": "1"}, timeout=300)
    assert result.returncode == 0, result.output
    assert "Out of bounds values : 0 OK" in result.output, result.output
    assert result.output.count("float32    none") == 5, result.output  # 8 B .. 1 MiB by 32


def test_an_unknown_allgather_algorithm_is_an_error_naming_it_and_the_choices() -> None:
    result = run_command([kolorun_path(), "-np", "2", kolo_bench_path(), "-g", "tree"],
                         timeout=120)
    assert result.returncode != 0
    assert "unknown allgather algorithm 'tree' (-g auto|ring|doubling|bruck)" in result.output, \
        result.output
