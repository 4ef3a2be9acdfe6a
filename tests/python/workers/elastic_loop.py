"""An elastic worker with plain kolo (no torch, no kolo.torch.elastic): a loop of allreduce
"steps" that survives membership changes by shutdown() + init(), as elastic.run does.

Each step allreduces [1, step] (Sum): the first entry must equal size() and the second
step * size(), so a rank that resumed from a different step than the others is caught. Rank 0
"commits" every step (elastic_commit). Behaviour from the environment, keyed by worker id:
  ELASTIC_TEST_STEPS          total steps (default 30)
  ELASTIC_TEST_STEP_SECONDS   sleep per step (default 0.1)
  ELASTIC_TEST_DIE            "<worker id>@<step>": that worker SIGKILLs itself at that step
  ELASTIC_TEST_STOP           "<worker id>@<step>": that worker SIGSTOPs itself at that step
  ELASTIC_TEST_DIE_IN_RESET   "<worker id>": that worker SIGKILLs itself in its first reset,
                              after the survivors were already sent into the next round
  ELASTIC_TEST_TIMES          "1": also print "TIME kill <t>" before a SIGKILL and "TIME resumed
                              <round> <t>" once a round is joined and synced (wall clock)
  ELASTIC_TEST_CHECK_HOSTS    "1": every step, reset when kolorun's hosts_updated stamp moved
Prints "round <g> rank <r> size <n> step <s>" at each (re)start and "worker <id> OK" at the end.
"""

import os
import signal
import sys
import time

import numpy as np

import kolo
from kolo import _core

WORKER = os.environ["KOLO_WORKER_ID"]


def trigger(variable: str, step: int) -> bool:
    value = os.environ.get(variable, "")
    return any(entry == f"{WORKER}@{step}" for entry in value.split(","))


def main() -> None:
    steps = int(os.environ.get("ELASTIC_TEST_STEPS", "30"))
    pause = float(os.environ.get("ELASTIC_TEST_STEP_SECONDS", "0.1"))
    check_hosts = os.environ.get("ELASTIC_TEST_CHECK_HOSTS") == "1"
    step = 0
    resets = 0
    while True:
        if resets == 1 and WORKER in os.environ.get("ELASTIC_TEST_DIE_IN_RESET", "").split(","):
            time.sleep(0.5)  # the others are bootstrapping the round that counts on this worker
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            kolo.init()
        except _core.WorkerRemovedError as error:
            print(f"worker {WORKER} removed: {error}", flush=True)
            return
        except kolo.KoloError as error:  # the round was superseded while joining it
            print(f"worker {WORKER} init failed, again: {error}", flush=True)
            resets += 1
            continue
        try:
            # "state.sync()": the new rank 0's step wins (as elastic.run broadcasts the state).
            step = int(kolo.broadcast(np.array([step], np.int64), root_rank=0, name="sync")[0])
            print(f"round {_core.elastic_round()} rank {kolo.rank()} size {kolo.size()} "
                  f"step {step}", flush=True)
            if os.environ.get("ELASTIC_TEST_TIMES") == "1":
                print(f"TIME resumed {_core.elastic_round()} {time.time():.6f}", flush=True)
            stamp = _core.elastic_hosts_updated()[0]
            while step < steps:
                if trigger("ELASTIC_TEST_DIE", step):
                    if os.environ.get("ELASTIC_TEST_TIMES") == "1":
                        print(f"TIME kill {time.time():.6f}", flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
                if trigger("ELASTIC_TEST_STOP", step):
                    os.kill(os.getpid(), signal.SIGSTOP)
                total = kolo.allreduce(np.array([1, step], np.int64), op=kolo.Sum, name="step")
                assert int(total[0]) == kolo.size(), (total, kolo.size())
                assert int(total[1]) == step * kolo.size(), (total, step, kolo.size())
                step += 1
                if kolo.rank() == 0:
                    _core.elastic_commit(step)
                if check_hosts:
                    # As check_host_updates: rank 0 decides, everyone follows.
                    moved = _core.elastic_hosts_updated()[0] != stamp if kolo.rank() == 0 else 0
                    moved = int(kolo.broadcast(np.array([moved], np.int64), root_rank=0,
                                               name="hosts")[0])
                    if moved:
                        raise InterruptedError("hosts updated")
                time.sleep(pause)
            kolo.shutdown()
            break
        except (kolo.KoloError, InterruptedError) as error:
            print(f"worker {WORKER} resets at step {step}: {type(error).__name__}: {error}",
                  flush=True)
            resets += 1
            kolo.shutdown()
    print(f"worker {WORKER} OK steps {step} resets {resets}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
