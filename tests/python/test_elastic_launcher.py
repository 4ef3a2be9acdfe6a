"""kolorun's elastic mode end to end with plain kolo (no torch, no kolo.torch.elastic): membership
rounds, lost / stopped / removed workers, workers dying during a reset, growth from the discovery
script, and the --min-np limits. The worker is workers/elastic_loop.py (its docstring says what
it checks); every job runs under a timeout, so a hang fails the test."""

import json
import os
import re
import sys
import time

from conftest import WORKERS, kolorun_path
from elastic_job import Job

LOOP = str(WORKERS / "elastic_loop.py")
# Short peer timeout: a stopped worker is found in seconds (the launcher then waits this + 1 s).
BASE_ENV = {"KOLO_PEER_TIMEOUT": "3", "ELASTIC_TEST_STEP_SECONDS": "0.1"}
# Three names of this machine: three hosts to kolorun, all started locally.
THREE_HOSTS = "localhost:1,127.0.0.1:1,127.0.1.1:1"


def start(launcher_args, env=None, timeout=120):
    full_env = dict(os.environ)
    full_env.update(BASE_ENV)
    full_env.update(env or {})
    return Job([kolorun_path(), *launcher_args, sys.executable, LOOP], full_env, timeout)


def run(launcher_args, env=None, timeout=120):
    job = start(launcher_args, env, timeout)
    return job.finish(), job.output


def worker_lines(output, serial):
    return [line.split(":", 1)[1] for line in output.splitlines()
            if line.startswith(f"[{serial}]<stdout>:")]


def assert_finished(output, serials, steps):
    for serial in serials:
        done = [line for line in worker_lines(output, serial) if " OK steps " in line]
        assert done and f"OK steps {steps} " in done[0], \
            f"worker {serial} did not finish:\n{output}"


def test_undisturbed_job_runs_one_round():
    code, output = run(["-np", "3", "--min-np", "2", "-H", "localhost:3"],
                       {"ELASTIC_TEST_STEPS": "10"})
    assert code == 0, output
    assert_finished(output, [0, 1, 2], 10)
    for serial in range(3):
        assert f"round 1 rank {serial} size 3 step 0" in worker_lines(output, serial), output
    assert "[kolorun] elastic:" not in output, output


def test_sigkilled_worker_survivors_continue_in_order_from_the_commit(tmp_path):
    timeline = tmp_path / "timeline.json"
    # Three names of this machine, three hosts to kolorun: a failed worker's host leaves the job
    # whole (Horovod's rule), so each worker that fails here is alone on its host.
    code, output = run(["-np", "3", "--min-np", "2", "-H", THREE_HOSTS],
                       {"ELASTIC_TEST_STEPS": "20", "ELASTIC_TEST_DIE": "127.0.0.1:0#1@5",
                        "HOROVOD_TIMELINE": str(timeline)})
    assert code == 0, output
    # One timeline for the job: round 2's rank 0 continues round 1's file (still one JSON
    # array), and each round's start is marked.
    events = json.loads(timeline.read_text())
    marks = [event["name"] for event in events if event["name"].startswith("ELASTIC_RESET")]
    assert marks == ["ELASTIC_RESET round 1, size 3", "ELASTIC_RESET round 2, size 2"], marks
    assert re.search(r"\[kolorun\] elastic: rank 1 on host 127.0.0.1 lost \(killed by signal "
                     r"SIGKILL \(9\)\); continuing with 2 ranks from commit \d+", output), output
    # Survivors keep their order: the oldest is rank 0 of round 2; nobody is skipped back.
    assert "round 2 rank 0 size 2 step 5" in worker_lines(output, 0), output
    assert "round 2 rank 1 size 2 step 5" in worker_lines(output, 2), output
    assert_finished(output, [0, 2], 20)


def test_stopped_worker_is_killed_and_the_job_goes_on():
    code, output = run(["-np", "3", "--min-np", "2", "-H", THREE_HOSTS],
                       {"ELASTIC_TEST_STEPS": "12", "ELASTIC_TEST_STOP": "127.0.1.1:0#2@4"})
    assert code == 0, output
    assert re.search(r"rank 2 on host 127.0.1.1 lost \(stuck: no reset within 4 s, killed\); "
                     r"continuing with 2 ranks", output), output
    assert "round 2 rank 1 size 2 step 4" in worker_lines(output, 1), output
    assert_finished(output, [0, 1], 12)


def test_worker_dying_during_the_reset_supersedes_the_round():
    code, output = run(["-np", "4", "--min-np", "2", "-H", "localhost:2,127.0.0.1:1,127.0.1.1:1"],
                       {"ELASTIC_TEST_STEPS": "12", "ELASTIC_TEST_DIE": "127.0.0.1:0#2@4",
                        "ELASTIC_TEST_DIE_IN_RESET": "127.0.1.1:0#3"})
    assert code == 0, output
    assert "continuing with 3 ranks" in output and "continuing with 2 ranks" in output, output
    # Whoever was still bootstrapping round 2 gave it up at once and joined round 3: either it
    # saw round 3 published first ("superseded"), or kolorun's report of the dead worker reached
    # its bootstrap wait first ("did not join"); which comes first is a race of the machine's
    # load, and both end that round's wait at once rather than after a timeout.
    assert re.search(r"was superseded by round 3|init failed, again: rank \d+ did not join the "
                     r"job: the launcher reports the first failure", output), output
    assert "round 3 rank 0 size 2 step 4" in worker_lines(output, 0), output
    assert "round 3 rank 1 size 2 step 4" in worker_lines(output, 1), output
    assert_finished(output, [0, 1], 12)


def test_discovery_grows_then_removes_a_host(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts}\n")
    script.chmod(0o755)
    job = start(["-np", "2", "--min-np", "1", "--max-np", "3", "--host-discovery-script",
               str(script)],
              {"ELASTIC_TEST_STEPS": "60", "ELASTIC_TEST_CHECK_HOSTS": "1"})
    job.wait_for_line(r"^\[1\]<stdout>:round 1 rank 1 size 2")
    hosts.write_text("localhost:2\n127.0.0.1:1\n")  # a second (local) host name: one more slot
    job.wait_for_line(r"^\[2\]<stdout>:round 2 rank 2 size 3")
    hosts.write_text("localhost:2\n")
    code = job.finish()
    output = job.output
    assert code == 0, output
    assert "[kolorun] elastic: host 127.0.0.1 added (1 slots)" in output, output
    assert "[kolorun] elastic: host 127.0.0.1 removed" in output, output
    # The new worker started from the state of the running ones, not from 0; it left with 0.
    assert re.search(r"round 2 rank 2 size 3 step [1-9]", "\n".join(worker_lines(output, 2)))
    assert any("removed: elastic worker 127.0.0.1:0#2 is not a member of round 3" in line
               for line in worker_lines(output, 2)), output
    assert any(line.startswith("round 3 rank 0 size 2") for line in worker_lines(output, 0))
    assert_finished(output, [0, 1], 60)


def test_a_failure_that_leaves_no_worker_fails_at_once():
    start = time.monotonic()
    code, output = run(["-np", "2", "--min-np", "2", "-H", "localhost:2"],
                       {"ELASTIC_TEST_STEPS": "200", "ELASTIC_TEST_DIE": "localhost:1#1@3"},
                       timeout=60)
    assert code != 0, output
    # The failed worker's host leaves whole (Horovod's rule): nobody holds the state any more.
    assert re.search(r"rank 1 on host localhost lost \(killed by signal SIGKILL \(9\)\); no worker "
                     r"is left \(host localhost", output), output
    assert time.monotonic() - start < 50, output


def test_too_few_slots_for_longer_than_the_elastic_timeout_ends_the_job(tmp_path):
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\necho localhost:1\n")
    script.chmod(0o755)
    code, output = run(["-np", "2", "--min-np", "2", "--host-discovery-script", str(script),
                        "--elastic-timeout", "2"], {"ELASTIC_TEST_STEPS": "5"}, timeout=60)
    assert code == 1, output
    assert re.search(r"only 1 worker\(s\) available \(hosts: localhost:1; blacklisted: \), fewer "
                     r"than --min-np 2 for longer than --elastic-timeout 2 s", output), output


def test_reset_limit_ends_the_job():
    code, output = run(["-np", "3", "--min-np", "1", "-H", "localhost:2,127.0.0.1:1",
                        "--reset-limit", "0"],
                       {"ELASTIC_TEST_STEPS": "200", "ELASTIC_TEST_DIE": "127.0.0.1:0#2@3"},
                       timeout=60)
    assert code == 1, output
    assert "1 resets exceed --reset-limit 0" in output, output


def test_lost_worker_is_replaced_on_a_free_slot_of_another_host():
    # --max-np 2 leaves the third host's slot free; the failed host is blacklisted, so the
    # replacement goes there (localhost, 127.0.0.1 and 127.0.1.1 are names of this machine).
    code, output = run(["-np", "2", "--min-np", "2", "--max-np", "2", "-H", THREE_HOSTS],
                       {"ELASTIC_TEST_STEPS": "15", "ELASTIC_TEST_DIE": "127.0.0.1:0#1@4"})
    assert code == 0, output
    assert "rank 1 on host 127.0.0.1 lost (killed by signal SIGKILL (9)); continuing with 2 " \
           "ranks" in output, output
    assert "round 2 rank 0 size 2 step 4" in worker_lines(output, 0), output
    assert "round 2 rank 1 size 2 step 4" in worker_lines(output, 2), output  # the new worker
    assert_finished(output, [0, 2], 15)


def test_interrupt_is_forwarded_and_ends_the_job():
    job = start(["-np", "2", "--min-np", "1", "-H", "localhost:2"], {"ELASTIC_TEST_STEPS": "1000"},
              timeout=60)
    job.wait_for_line(r"^\[1\]<stdout>:round 1 rank 1 size 2 step 0")
    job.proc.send_signal(2)  # SIGINT, as Ctrl-C
    code = job.finish()
    output = job.output
    assert code == 130, output
    assert "received SIGINT: forwarded to the workers" in output, output
    assert output.count("KeyboardInterrupt") == 2, output
    assert "[kolorun] elastic:" not in output, output  # stopping is no membership change
