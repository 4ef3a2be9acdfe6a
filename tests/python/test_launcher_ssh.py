"""kolorun's multi-host path end to end, on one machine: a fake `ssh` first on PATH (tests/python/
fake_ssh/ssh) runs the remote command here with `sh -c` in a clean login-like environment, so the
ssh spawner, the remote agent, environment forwarding, the working directory, output prefixes and
files, the pre-launch version check and remote failures are all exercised for real. 127.0.0.2 and
127.0.0.3 are "remote" hosts to kolorun (only localhost, 127.0.0.1 and this machine's name are
local), and they resolve without DNS."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import WORKERS, JobResult, kolorun_path, run_job

FAKE_SSH_DIR = Path(__file__).parent / "fake_ssh"
TWO_HOSTS = {2: "127.0.0.2:1,127.0.0.3:1", 3: "127.0.0.2:2,127.0.0.3:1"}


def ssh_env(tmp_path, **extra):
    env = dict(os.environ)
    env["PATH"] = f"{FAKE_SSH_DIR}{os.pathsep}{env['PATH']}"
    env["FAKE_SSH_LOG"] = str(tmp_path / "ssh.log")
    env.update(extra)
    return env


def ssh_calls(tmp_path):
    log = tmp_path / "ssh.log"
    return log.read_text().splitlines() if log.exists() else []


def run(args, env, cwd=None, timeout=120):
    try:
        proc = subprocess.run([kolorun_path(), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
                              timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"kolorun did not finish within {timeout} s:\n{expired.stdout}")
    return JobResult(proc.returncode, proc.stdout)


@pytest.mark.parametrize("np_", [2, 3])
def test_collectives_across_ssh_hosts(tmp_path, np_):
    result = run_job(np_, "collectives.py", str(np_), env=ssh_env(tmp_path), timeout=300,
                     launcher_args=("-H", TWO_HOSTS[np_]))
    result.assert_ok(np_)
    calls = ssh_calls(tmp_path)
    # One version check per host, then one agent session per rank.
    assert sum("--version]" in call for call in calls) == 2, calls
    assert sum("--remote-agent" in call for call in calls) == np_, calls


@pytest.mark.parametrize("np_", [2, 3])
def test_remote_ranks_learn_their_host_places(tmp_path, np_):
    result = run_job(np_, "report_env.py", env=ssh_env(tmp_path), timeout=120,
                     launcher_args=("-H", TWO_HOSTS[np_]))
    result.assert_ok(np_)
    local_size = np_ - 1  # the first host has all but one rank
    assert f"rank 0 size {np_} local 0/{local_size} cross 0/2" in result.lines_of(0), result.output
    last = np_ - 1
    assert f"rank {last} size {np_} local 0/1 cross 1/2" in result.lines_of(last), result.output


def test_environment_cwd_and_ssh_options_reach_the_remote_rank(tmp_path):
    work = tmp_path / "workdir"
    work.mkdir()
    script = ("import os; e = os.environ; "
              "print('cwd', os.getcwd()); "
              "print('via', e.get('FAKE_SSH_HOST')); "
              "print('forwarded', e.get('KOLO_TEST_FORWARDED'), e.get('KOLO_TEST_SET')); "
              "print('kolo_var', e.get('KOLO_TEST_PREFIXED')); "
              "print('not_forwarded', e.get('NOT_FORWARDED_VAR')); "
              "print('pythonpath', e.get('PYTHONPATH') == os.environ.get('EXPECTED_PYTHONPATH'))")
    # A PYTHONPATH entry of the test's own, so forwarding is proven even where the caller has no
    # PYTHONPATH (CI runs against the pip-installed package).
    pythonpath = os.pathsep.join(filter(None, [str(tmp_path / "marker"),
                                               os.environ.get("PYTHONPATH", "")]))
    env = ssh_env(tmp_path, KOLO_TEST_FORWARDED="yes", NOT_FORWARDED_VAR="leak",
                  PYTHONPATH=pythonpath, EXPECTED_PYTHONPATH=pythonpath)
    # HOROVOD_/KOLO_ variables travel on their own; this one only if the launcher forwards it.
    env["HOROVOD_TEST_PREFIXED"] = "h"
    env["KOLO_TEST_PREFIXED"] = "k"
    identity = tmp_path / "id_test"
    identity.write_text("not a key: the fake ssh never reads it\n")
    result = run(["-np", "2", "-H", "127.0.0.2:1,127.0.0.3:1", "-p", "2222", "-i", str(identity),
                  "-x", "KOLO_TEST_FORWARDED", "-x", "KOLO_TEST_SET=set by -x",
                  "-x", "EXPECTED_PYTHONPATH", sys.executable, "-c", script], env, cwd=work)
    assert result.returncode == 0, result.output
    for rank, host in ((0, "127.0.0.2"), (1, "127.0.0.3")):
        lines = result.lines_of(rank)
        assert f"cwd {work}" in lines, result.output
        assert f"via {host}" in lines, result.output
        assert "forwarded yes set by -x" in lines, result.output
        assert "kolo_var k" in lines, result.output
        assert "not_forwarded None" in lines, result.output
        assert "pythonpath True" in lines, result.output
    calls = ssh_calls(tmp_path)
    assert calls, "the fake ssh was never called"
    secret_free = all("KOLO_SECRET" not in call for call in calls)
    assert secret_free, f"the job secret must not be on an ssh command line: {calls}"
    for call in calls:
        assert call.startswith("[ssh]") is False  # argv[0] is not logged
        assert "[-o][BatchMode=yes]" in call, call
        assert "[-p][2222]" in call, call
        assert f"[-i][{identity}]" in call, call


def test_output_prefixes_and_per_rank_files(tmp_path):
    logs = tmp_path / "logs"
    script = ("import os, sys; r = os.environ['KOLO_RANK']; "
              "print('out', r); print('err', r, file=sys.stderr)")
    result = run(["-np", "3", "-H", TWO_HOSTS[3], "--output-filename", str(logs),
                  sys.executable, "-c", script], ssh_env(tmp_path))
    assert result.returncode == 0, result.output
    for rank in range(3):
        assert f"out {rank}" in result.lines_of(rank), result.output
        assert f"err {rank}" in result.lines_of(rank, "stderr"), result.output
        assert (logs / f"rank.{rank}" / "stdout").read_text() == f"out {rank}\n"
        assert (logs / f"rank.{rank}" / "stderr").read_text() == f"err {rank}\n"
    # The agent's status line is consumed by the launcher, never shown.
    assert "kolo-agent-status" not in result.output


def test_version_mismatch_and_unreachable_host_stop_the_launch(tmp_path):
    env = ssh_env(tmp_path, FAKE_SSH_OLD_VERSION="127.0.0.3", FAKE_SSH_UNREACHABLE="127.0.0.4")
    result = run(["-np", "3", "-H", "127.0.0.2:1,127.0.0.3:1,127.0.0.4:1", "true"], env)
    assert result.returncode == 2, result.output
    assert "host '127.0.0.3' runs 'kolorun 0.0.1' but this launcher is 'kolorun 0.1.0'" in \
        result.output
    assert "host '127.0.0.4' is not reachable over ssh" in result.output
    assert "Connection refused" in result.output  # ssh's own words
    assert "127.0.0.2" not in result.output.split("cannot launch")[1]  # the good host is fine
    assert not any("--remote-agent" in call for call in ssh_calls(tmp_path)), \
        "no rank may start when a host fails the check"


@pytest.mark.parametrize("np_, ending, code, how", [
    (3, "os.kill(os.getpid(), signal.SIGKILL)", 137, "was killed by signal SIGKILL (9)"),
    (2, "sys.exit(7)", 7, "exited with code 7"),
])
def test_remote_rank_end_is_reported_with_host_and_how(tmp_path, np_, ending, code, how):
    script = ("import os, signal, sys, time\n"
              f"if os.environ['KOLO_RANK'] == '{np_ - 1}': {ending}\n"
              "time.sleep(60)")
    result = run(["-np", str(np_), "-H", TWO_HOSTS[np_], sys.executable, "-c", script],
                 ssh_env(tmp_path), timeout=60)
    assert result.returncode == code, result.output
    assert (f"the first rank to fail was rank {np_ - 1} on host 127.0.0.3, which {how}"
            in result.output), result.output


def test_missing_remote_command_is_named(tmp_path):
    result = run(["-np", "2", "-H", TWO_HOSTS[2], "/nonexistent/kolo-program"],
                 ssh_env(tmp_path), timeout=60)
    assert result.returncode == 127, result.output
    assert "/nonexistent/kolo-program" in result.output


def wait_for_files(paths, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.exists() and p.read_text().strip() for p in paths):
            return [int(p.read_text()) for p in paths]
        time.sleep(0.1)
    pytest.fail(f"ranks did not start: {paths}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose. The process may also be reaped between the two looks
    # (its /proc entry then fails to read: ProcessLookupError, FileNotFoundError).
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_sleeping_job(tmp_path, script_extra=""):
    script = ("import os, sys, time\n" + script_extra +
              f"open(os.path.join({str(tmp_path)!r}, 'pid' + os.environ['KOLO_RANK']), 'w')"
              ".write(str(os.getpid()))\n"
              "time.sleep(120)\n")
    return subprocess.Popen([kolorun_path(), "-np", "2", "-H", TWO_HOSTS[2], sys.executable, "-c",
                             script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=ssh_env(tmp_path))


def test_remote_ranks_die_with_a_killed_launcher(tmp_path):
    proc = start_sleeping_job(tmp_path)
    try:
        pids = wait_for_files([tmp_path / "pid0", tmp_path / "pid1"])
        assert all(alive(pid) for pid in pids)
        proc.kill()  # SIGKILL: kolorun cannot clean up; the agents must
        proc.wait(timeout=10)
        deadline = time.monotonic() + 20
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in pids), "remote ranks outlived kolorun"
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_sigterm_is_forwarded_to_remote_ranks(tmp_path):
    handler = ("import signal\n"
               "def stop(number, frame):\n"
               "    print('rank got', signal.Signals(number).name, flush=True)\n"
               "    sys.exit(0)\n"
               "signal.signal(signal.SIGTERM, stop)\n")
    proc = start_sleeping_job(tmp_path, handler)
    try:
        wait_for_files([tmp_path / "pid0", tmp_path / "pid1"])
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    result = JobResult(proc.returncode, out)
    for rank in (0, 1):
        assert "rank got SIGTERM" in result.lines_of(rank), out


def test_slurm_allocation_gives_hosts_and_np(tmp_path):
    env = ssh_env(tmp_path, SLURM_JOB_NODELIST="127.0.0.[2-3]", SLURM_TASKS_PER_NODE="2,1",
                  SLURM_NTASKS="3")
    result = run([sys.executable, str(WORKERS / "report_env.py")], env)  # no -np, no -H
    result.assert_ok(3)
    assert "rank 1 size 3 local 1/2 cross 0/1" in result.lines_of(1), result.output
    assert "rank 2 size 3 local 0/1 cross 1/2" in result.lines_of(2), result.output


def test_volcano_worker_file(tmp_path):
    workers = tmp_path / "worker.host"
    workers.write_text("127.0.0.2\n127.0.0.3\n")
    result = run(["-np", "3", "--hostfile", str(workers), "--hosts-file-format", "volcano",
                  "--slots-per-host", "1", sys.executable, str(WORKERS / "report_env.py")],
                 ssh_env(tmp_path))
    result.assert_ok(3)
    # localhost first (started directly), then each worker over ssh.
    assert sum("--remote-agent" in call for call in ssh_calls(tmp_path)) == 2
    assert "rank 0 size 3 local 0/1 cross 0/3" in result.lines_of(0), result.output


def test_hostfile_errors_name_the_line(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# cluster\nlocalhost slots=2\n\nnode1 slots=two\n")
    result = run(["-np", "2", "--hostfile", str(hostfile), "true"], dict(os.environ))
    assert result.returncode == 2, result.output
    assert f"{hostfile}:4:" in result.output and "'two' is not a number" in result.output


def test_check_build_reports_what_python_finds():
    proc = subprocess.run([kolorun_path(), "--check-build"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout
    assert "Available Controllers:" in proc.stdout
    try:
        import torch  # noqa: F401  (its CUDA build loads the NCCL that the probe finds too)
    except ImportError:
        pass
    from kolo import _core
    # The marks follow the module's own build flags, whatever this build has; NCCL's also needs
    # an NCCL that loads (kolo finds it at run time).
    nccl = _core.NCCL_BUILT and _core.nccl_status()["loaded"]
    for name, flag in (("Gloo", _core.GLOO_BUILT), ("MPI", _core.MPI_BUILT), ("NCCL", nccl)):
        assert f"{'[X]' if flag else '[ ]'} {name}" in proc.stdout, proc.stdout
    try:
        import torch  # noqa: F401
        assert f"[X] PyTorch (torch {torch.__version__})" in proc.stdout, proc.stdout
    except ImportError:
        assert "[ ] PyTorch" in proc.stdout, proc.stdout


def test_network_interfaces_choose_the_rendezvous_address(tmp_path):
    script = ("import os; e = os.environ; "
              "print('rendezvous', e['KOLO_RENDEZVOUS_ADDR'], e.get('HOROVOD_GLOO_IFACE'))")
    result = run(["-np", "2", "-H", TWO_HOSTS[2], "--network-interfaces", "lo", sys.executable,
                  "-c", script], ssh_env(tmp_path))
    assert result.returncode == 0, result.output
    for rank in (0, 1):
        assert "rendezvous 127.0.0.1 lo" in result.lines_of(rank), result.output
    result = run(["-np", "2", "-H", TWO_HOSTS[2], "--network-interfaces", "nosuch0", "true"],
                 ssh_env(tmp_path))
    assert result.returncode == 2, result.output
    assert "none of the --network-interfaces (nosuch0) has an IPv4 address" in result.output


def test_remote_rank_ignoring_sigterm_is_killed_after_the_grace(tmp_path):
    script = ("import os, signal, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              f"open(os.path.join({str(tmp_path)!r}, 'pid' + os.environ['KOLO_RANK']), 'w')"
              ".write(str(os.getpid()))\n"
              "if os.environ['KOLO_RANK'] == '1': time.sleep(1); sys.exit(3)\n"
              "time.sleep(120)\n")
    result = run(["-np", "2", "-H", TWO_HOSTS[2], "--failure-grace-seconds", "1", sys.executable,
                  "-c", script], ssh_env(tmp_path), timeout=90)
    assert result.returncode == 3, result.output
    assert "sending SIGKILL to the remaining rank(s): 0" in result.output, result.output
    assert "before kolorun's agent reported" not in result.output, result.output
    survivor = int((tmp_path / "pid0").read_text())
    deadline = time.monotonic() + 20
    while alive(survivor) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(survivor), "the remote rank outlived its ssh session"
