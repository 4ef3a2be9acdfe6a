"""The training script of the Horovod elastic scenarios (the contract of Horovod's
test/integration/data/elastic_torch_main.py, written for kolo's tests): an elastic loop of
--epochs epochs of --batches-per-epoch tiny steps, a commit after every batch and epoch; rank 0
appends one JSON line per epoch to --logfile (start rank, size, host, rendezvous count); ranks
listed in --exit-schedule fail at (epoch, batch); and when the discovery schedule changes the
hosts after an epoch, rank 0 waits up to --discovery-wait seconds for the launcher's notice."""

import argparse
import json
import os
import signal
import time

import torch
import torch.nn.functional as F

import horovod.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--logfile", required=True)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batches-per-epoch", type=int, default=10)
parser.add_argument("--epoch-wait", type=float, default=0.0)
parser.add_argument("--discovery-schedule", default="[]")
parser.add_argument("--discovery-wait", type=float, default=3.0)
parser.add_argument("--exit-schedule", default="{}")
parser.add_argument("--exit-mode", default="exception", choices=["exception", "kill"])
args = parser.parse_args()

hvd.init()
torch.manual_seed(0)
data, target = torch.randn(32, 2), torch.randint(0, 2, (32,))
model = torch.nn.Linear(2, 2)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.001 * hvd.size()),
                                     named_parameters=model.named_parameters())
# The worker's identity from its start: Horovod's variables, fixed for the process's life.
start_rank = int(os.environ.get("HOROVOD_RANK", "0"))
hostname = os.environ.get("HOROVOD_HOSTNAME")
schedule = json.loads(args.discovery_schedule)
hosts_at = {epoch: hosts for epoch, hosts in schedule if epoch is not None}
last_hosts = schedule[-1][1] if schedule else []
exits = json.loads(args.exit_schedule)


def fail_if_scheduled(epoch: int, batch: int) -> None:
    if start_rank in exits.get(str((epoch, batch)), []):
        if args.exit_mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError(f"scheduled failure at epoch {epoch} batch {batch}, start rank "
                           f"{start_rank}, rank {hvd.rank()}")


def wait_for_host_notice(state) -> None:
    # As Horovod's script: forget the last stamp, then poll the notice queue.
    state._last_updated_timestamp = 0
    began = time.monotonic()
    while state._host_messages.empty():
        if time.monotonic() - began > args.discovery_wait:
            raise TimeoutError("no host-change notice from the launcher in "
                               f"{args.discovery_wait} s")
        time.sleep(0.1)


@hvd.elastic.run
def train(state):
    state.rendezvous += 1
    while state.epoch < args.epochs:
        while state.batch < args.batches_per_epoch:
            fail_if_scheduled(state.epoch, state.batch)
            optimizer.zero_grad()
            F.cross_entropy(model(data), target).backward()
            optimizer.step()
            state.batch += 1
            state.commit()
        if hvd.rank() == 0:
            with open(args.logfile, "a") as log:
                log.write(json.dumps({"epoch": state.epoch, "start_rank": start_rank,
                                      "rank": hvd.rank(), "size": hvd.size(),
                                      "hostname": hostname,
                                      "rendezvous": state.rendezvous}) + "\n")
            now = hosts_at.get(state.epoch, last_hosts)
            if args.discovery_wait > 0 and now != hosts_at.get(state.epoch + 1, last_hosts):
                wait_for_host_notice(state)
        if args.epoch_wait > 0:
            time.sleep(args.epoch_wait)
        state.epoch += 1
        state.batch = 0
        state.commit()


def rescale_learning_rate():
    for group in optimizer.param_groups:
        group["lr"] = 0.001 * hvd.size()


state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0, rendezvous=0)
state.register_reset_callbacks([rescale_learning_rate])
train(state)
