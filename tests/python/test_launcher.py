"""kolorun end to end: per-rank output prefixes, exit status and failure report, horovodrun
alias."""

import shutil
import subprocess
import sys

from conftest import kolorun_path, run_job


def run(cmd, timeout=60):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def test_each_line_is_prefixed_with_rank_and_stream():
    proc = run([kolorun_path(), "-np", "2", sys.executable, "-c",
                "import os, sys; r = os.environ['KOLO_RANK']; print('out', r); "
                "print('err', r, file=sys.stderr)"])
    assert proc.returncode == 0, proc.stdout
    for rank in (0, 1):
        assert f"[{rank}]<stdout>:out {rank}" in proc.stdout.splitlines(), proc.stdout
        assert f"[{rank}]<stderr>:err {rank}" in proc.stdout.splitlines(), proc.stdout


def test_failing_rank_sets_exit_status_and_is_named():
    proc = run([kolorun_path(), "-np", "3", sys.executable, "-c",
                "import os, sys, time\n"
                "if os.environ['KOLO_RANK'] == '2': sys.exit(7)\n"
                "time.sleep(60)"], timeout=60)
    assert proc.returncode == 7, proc.stdout
    assert "rank 2" in proc.stdout and "7" in proc.stdout, proc.stdout


def test_horovodrun_alias_runs_a_kolo_job():
    horovodrun = shutil.which("horovodrun")
    assert horovodrun is not None, "horovodrun is not installed beside kolorun"
    from conftest import WORKERS

    proc = run([horovodrun, "-np", "2", "-H", "localhost:2", sys.executable,
                str(WORKERS / "report_env.py")])
    assert proc.returncode == 0, proc.stdout
    assert "[1]<stdout>:rank 1 OK" in proc.stdout.splitlines(), proc.stdout


def test_too_few_slots_is_an_error():
    proc = run([kolorun_path(), "-np", "3", "-H", "localhost:2", "true"])
    assert proc.returncode != 0
    assert "3" in proc.stdout and "2" in proc.stdout, proc.stdout


def test_local_and_cross_ranks_follow_host_identity():
    # Two host names that both mean this machine: the ranks learn their places through the
    # rendezvous (KOLO_HOSTNAME per slot), as they would on two real hosts.
    result = run_job(4, "report_env.py", timeout=90,
                     launcher_args=("-H", "localhost:2,127.0.0.1:2"))
    result.assert_ok(4)
    expected = {0: "local 0/2 cross 0/2", 1: "local 1/2 cross 0/2",
                2: "local 0/2 cross 1/2", 3: "local 1/2 cross 1/2"}
    for rank, place in expected.items():
        assert f"rank {rank} size 4 {place}" in result.lines_of(rank), result.output
