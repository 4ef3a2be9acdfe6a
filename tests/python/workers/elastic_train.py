"""Deterministic elastic training on synthetic data indexed by sample id (issue 11, point 4).

Each sample is (id, features(id), target(id)); every step allgathers the ids the ranks trained
on and appends them to ``state.seen``, which is committed and rolled back with the model. At
the end of every epoch each rank checks that ``state.seen`` holds every id exactly once: no
sample skipped, none trained twice past the last commit (DistributedSampler-style padding of
the epoch's last batch is left out of the count). After every sync (the start of train(), so
after each reset) all ranks check that model and optimizer state are bitwise identical and that
the learning rate was rescaled to the new size.

Faults, each at most once per job (a marker file in --marker-dir says it happened):
  --raise EPOCH:STEP:RANK     that rank raises HorovodInternalError during the step (simulated
                              failure: works under plain kolorun, where init() re-forms the
                              same ranks)
  --kill EPOCH:STEP:RANK:SIG  that rank sends itself SIG (KILL, STOP) after backward(), while
                              its gradients' allreduces are in flight
  --hosts-update EPOCH:STEP   rank 0 is told that hosts were added (HostsUpdatedInterrupt at
                              the next commit on every rank, no rollback)
  --die-in-reset RANK         the worker of first-round rank RANK prints DIE-IN-RESET pid=P
                              when its first reset enters init() (the test kills it then)
What a GPU changes, played on the CPU (test_elastic_reset.py; with KOLO_STAGE_THROUGH_HOST):
  --backward-thread           backward() runs on one long-lived thread, so the gradients' hooks
                              submit from there, as CUDA's autograd engine runs them on its
                              device thread while the caller waits
  --gpu-exchange              the ranks compare their GPUs before each session's first global
                              operation, as where CUDA is present (kolo.torch.staging)
STEP counts committed steps of the whole job (state.step). Prints, from rank 0:
  SYNC size=N step=S hash=H t=T members=ID,... after each sync (worker ids in rank order)
  EPOCH e exactly-once size=N
  CALLBACK size=N             in the reset callback    FINAL hash=H steps=S
"""

import argparse
import faulthandler
import hashlib
import math
import os
import queue
import signal
import sys
import threading
import time

import torch

import horovod.torch as hvd
from horovod.common.elastic import HostUpdateResult

parser = argparse.ArgumentParser()
parser.add_argument("--samples", type=int, default=60)
parser.add_argument("--batch", type=int, default=2)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--raise", dest="raise_at", default=None)
parser.add_argument("--kill", default=None)
parser.add_argument("--hosts-update", default=None)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--die-in-reset", type=int, default=None,
                    help="the worker of first-round rank N says when its first reset enters "
                         "init(), so that the test can kill it there")
parser.add_argument("--marker-dir", default=None)
parser.add_argument("--backward-thread", action="store_true")
parser.add_argument("--gpu-exchange", action="store_true")
parser.add_argument("--device", default="cpu",
                    help="cuda: model and batches on the rank's GPU (test_gpu_faults.py)")
args = parser.parse_args()


def say(text):
    if hvd.rank() == 0:
        print(text, flush=True)


def once(name):
    """True the first time in the whole job that fault `name` fires."""
    path = os.path.join(args.marker_dir, name)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def at(spec, epoch, step):
    """The fields after EPOCH:STEP if `spec` names this point, else None."""
    if spec is None:
        return None
    fields = spec.split(":")
    if int(fields[0]) == epoch and int(fields[1]) == step:
        return fields[2:]
    return None


class SampleIds(torch.utils.data.Dataset):
    def __len__(self):
        return args.samples

    def __getitem__(self, i):
        x = torch.tensor([math.sin(i), math.cos(i), i / args.samples, 1.0])
        return i, x, torch.tensor([0.3 * i / args.samples])


def state_hash(model, optimizer):
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.detach().cpu().numpy().tobytes())
    opt = optimizer.state_dict()
    for pid, entry in sorted(opt["state"].items()):
        for key, value in sorted(entry.items()):
            data = value.cpu().numpy().tobytes() if torch.is_tensor(value) else repr(value).encode()
            digest.update(f"{pid}.{key}".encode() + data)
    digest.update(repr([g["lr"] for g in opt["param_groups"]]).encode())
    return digest.hexdigest()[:16]


if args.die_in_reset is not None:
    # This worker announces, on entering the init() of its first reset, that it is about to
    # join the new round; the test SIGKILLs it then (by the pid printed), while the others are
    # re-forming the job.
    import kolo.torch.elastic as elastic_module

    real_init = elastic_module.init

    def announce_then_init():
        if int(os.environ.get("KOLO_RANK", "-1")) == args.die_in_reset and once("die_in_reset"):
            print(f"DIE-IN-RESET rank={args.die_in_reset} pid={os.getpid()}", flush=True)
        real_init()

    elastic_module.init = announce_then_init

if os.environ.get("WORKER_STACKS_AFTER_S"):
    # A check on a lent GPU (test_gpu_faults.py): every Python thread's stack, the autograd
    # engine's device thread among them, printed while a hang waits (sessions 39 and 44: the
    # CUDA resets at np 2 ran into the step's timeout with no report).
    faulthandler.dump_traceback_later(float(os.environ["WORKER_STACKS_AFTER_S"]), repeat=True)
if args.gpu_exchange:
    import kolo.torch.staging as staging

    staging._cuda_present = lambda: True


class BackwardThread:
    """One thread that runs every backward() while the caller waits, as CUDA's autograd engine
    does on its device thread (the hooks, and so kolo's submissions, run there)."""

    def __init__(self):
        self.jobs = queue.Queue()
        self.runs = 0  # backward() calls run there (the test checks the thread was used)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            loss, done = self.jobs.get()
            try:
                loss.backward()
                self.runs += 1
                done.put(None)
            except BaseException as error:  # handed to the caller, as the engine does
                done.put(error)

    def backward(self, loss):
        done = queue.Queue()
        self.jobs.put((loss, done))
        error = done.get()
        if error is not None:
            raise error


backward_thread = BackwardThread() if args.backward_thread else None
backward = backward_thread.backward if backward_thread else torch.Tensor.backward
hvd.init()
torch.manual_seed(1234)
torch.set_num_threads(1)
device = torch.device("cpu")
if args.device == "cuda":
    # As the guides, with every rank on GPU 0 where the machine has one.
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device())
dataset = SampleIds()
model = torch.nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9,
                            weight_decay=1e-3)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=5)


def on_reset():
    for group in optimizer.param_groups:
        group["lr"] = args.lr * hvd.size()
    say(f"CALLBACK size={hvd.size()}")


@hvd.elastic.run
def train(state):
    digest = state_hash(state.model, state.optimizer)
    hashes = hvd.allgather_object(digest)
    assert len(set(hashes)) == 1, f"state differs between ranks after the sync: {hashes}"
    lrs = [g["lr"] for g in state.optimizer.param_groups]
    assert lrs == [args.lr * hvd.size()] * len(lrs), f"lr {lrs} not rescaled to {hvd.size()}"
    # Which worker holds which rank now (kolorun's stable worker ids in elastic mode).
    members = hvd.allgather_object(os.environ.get("KOLO_WORKER_ID", f"first-rank-{hvd.rank()}"))
    say(f"SYNC size={hvd.size()} step={state.step} hash={digest} t={time.time():.3f} "
        f"members={','.join(members)}")
    if args.gpu_exchange:  # this session's first global operation compared the ranks' GPUs
        say(f"GPU-TABLE rows={len(staging._gpu_table.get('rows', ()))}")
    # Horovod's elastic idiom: the loop variable is the state's own epoch, so a reset resumes
    # from the committed epoch.
    for state.epoch in range(state.epoch, args.epochs):  # noqa: B020
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch,
                                             sampler=state.sampler)
        rank, size = state.sampler.rank, state.sampler.num_replicas
        real = len(state.sampler.remaining_indices)
        for batch_idx, (ids, x, y) in enumerate(loader):
            point = (state.epoch, state.step)
            if at(args.hosts_update, *point) is not None and hvd.rank() == 0 and once("hosts"):
                state.on_hosts_updated(time.time_ns(), HostUpdateResult.added)
            fault = at(args.raise_at, *point)
            if fault and int(fault[0]) == hvd.rank() and once("raise"):
                raise hvd.HorovodInternalError(f"simulated failure of rank {hvd.rank()}")
            state.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(state.model(x.to(device)), y.to(device))
            backward(loss)
            fault = at(args.kill, *point)
            if fault and int(fault[0]) == hvd.rank() and once("kill"):
                print(f"KILL SIG{fault[1]} rank={hvd.rank()} step={state.step} "
                      f"t={time.time():.3f}", flush=True)
                os.kill(os.getpid(), getattr(signal, "SIG" + fault[1]))
            state.optimizer.step()
            kept = [int(i) for k, i in enumerate(ids)
                    if (batch_idx * args.batch + k) * size + rank < real]
            state.seen = state.seen + [i for part in hvd.allgather_object(kept) for i in part]
            state.sampler.record_batch(batch_idx, args.batch)
            state.step += 1
            if args.step_sleep:
                time.sleep(args.step_sleep)
            state.commit()
        assert sorted(state.seen) == list(range(args.samples)), (
            f"epoch {state.epoch}: ids trained past the last commit are not each id once: "
            f"missing {sorted(set(range(args.samples)) - set(state.seen))}, repeated "
            f"{sorted(i for i in set(state.seen) if state.seen.count(i) > 1)}")
        say(f"EPOCH {state.epoch} exactly-once size={hvd.size()}")
        state.seen = []
        state.sampler.set_epoch(state.epoch + 1)
    if backward_thread:
        say(f"BACKWARD-THREAD runs={backward_thread.runs}")
    if os.environ.get("KOLO_STAGE_THROUGH_HOST") == "shared":
        from kolo.torch import shared_gpu

        say(f"SHARED-BATCHES {sum(s.batches for s in shared_gpu._sessions.values())}")
    return state_hash(state.model, state.optimizer)


state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, step=0, seen=[])
state.register_reset_callbacks([on_reset])
final = train(state)
say(f"FINAL hash={final} steps={state.step}")
print(f"rank {hvd.rank()} OK", flush=True)
sys.exit(0)
