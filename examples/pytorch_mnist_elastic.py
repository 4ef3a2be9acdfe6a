"""Elastic MNIST training on kolo: the job survives lost workers and grows onto new hosts.

    # two workers now, up to four, hosts from a script printing "host:slots" lines
    kolorun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./discover.sh \\
        python3 examples/pytorch_mnist_elastic.py --epochs 1

    # the same on one machine without discovery (fixed pool of slots)
    kolorun -np 2 --min-np 1 --max-np 2 -H localhost:2 python3 examples/pytorch_mnist_elastic.py

Horovod's elastic example, with kolo's offline data (Fashion-MNIST IDX files, as
examples/pytorch_mnist.py) and an ElasticSampler: after a reset the rest of the epoch is split
among the workers that remain, so no sample is skipped or seen twice. The state (model,
optimizer, sampler, epoch, batch) is committed every --batches-per-commit batches; a lost worker
rolls the others back to the last commit, a new worker receives rank 0's state.
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data

import horovod.torch as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_mnist import DEFAULT_DATA_DIR, Net, load_dataset  # noqa: E402

parser = argparse.ArgumentParser(description="Elastic PyTorch MNIST example")
parser.add_argument("--batch-size", type=int, default=64,
                    help="input batch size per worker (default: 64)")
parser.add_argument("--test-batch-size", type=int, default=1000)
parser.add_argument("--epochs", type=int, default=2, help="epochs to train (default: 2)")
parser.add_argument("--lr", type=float, default=0.01,
                    help="learning rate per worker, scaled by the number of workers")
parser.add_argument("--momentum", type=float, default=0.5)
parser.add_argument("--seed", type=int, default=42)
parser.add_argument("--batches-per-commit", type=int, default=10,
                    help="commit the state every this many batches: a failure loses at most "
                         "this much work (default: 10)")
parser.add_argument("--max-batches", type=int, default=None,
                    help="stop each epoch after this many batches per worker")
parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                    help=f"MNIST-format IDX files (default: Fashion-MNIST in {DEFAULT_DATA_DIR})")
args = parser.parse_args()

# Horovod: initialize library; in elastic mode this joins the launcher's first round.
hvd.init()
torch.manual_seed(args.seed)
torch.set_num_threads(1)

train_dataset = load_dataset(args.data_dir, train=True)
test_dataset = load_dataset(args.data_dir, train=False)
# The elastic sampler re-partitions what is left of the epoch at each reset.
train_sampler = hvd.elastic.ElasticSampler(train_dataset, shuffle=True, seed=args.seed)

model = Net()
optimizer = optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=args.momentum)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())


def on_reset():
    # After a reset hvd.size() is the new number of workers: keep lr proportional to it.
    for group in optimizer.param_groups:
        group["lr"] = args.lr * hvd.size()
    if hvd.rank() == 0:
        print(f"reset: now {hvd.size()} workers, lr {args.lr * hvd.size():.4f}", flush=True)


@hvd.elastic.run
def train(state):
    # Runs again after every reset, from the state synced from rank 0.
    while state.epoch <= args.epochs:
        state.model.train()
        loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size,
                                             sampler=state.train_sampler)
        for batch_idx, (data, target) in enumerate(loader):
            if args.max_batches is not None and state.batch >= args.max_batches:
                break
            state.optimizer.zero_grad()
            loss = F.nll_loss(state.model(data), target)
            loss.backward()
            state.optimizer.step()
            # Every rank knows which samples all ranks just took: no communication needed.
            state.train_sampler.record_batch(batch_idx, args.batch_size)
            state.batch += 1
            if state.batch % 10 == 0 and hvd.rank() == 0:
                done = state.train_sampler.processed_num
                print(f"Train Epoch: {state.epoch} [{done}/{len(train_dataset)}]\t"
                      f"Loss: {loss.item():.6f}\t({hvd.size()} workers)", flush=True)
            if state.batch % args.batches_per_commit == 0:
                state.commit()
        # The epoch is done: the next one starts with a clear record, and the commit makes
        # "epoch done" and "record cleared" one step (a reset can never see one without the
        # other).
        state.epoch += 1
        state.batch = 0
        state.train_sampler.set_epoch(state.epoch)
        state.commit()


def test():
    # Evaluated by the workers of the final round, each on its share of the test set.
    model.eval()
    sampler = torch.utils.data.distributed.DistributedSampler(
        test_dataset, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
    loader = torch.utils.data.DataLoader(test_dataset, batch_size=args.test_batch_size,
                                         sampler=sampler)
    loss_sum, correct = 0.0, 0.0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            loss_sum += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1).eq(target).float().sum().item()
    totals = hvd.allreduce(torch.tensor([loss_sum, correct, float(len(sampler))]), op=hvd.Sum,
                           name="test_totals")
    if hvd.rank() == 0:
        print(f"\nTest set: Average loss: {totals[0] / totals[2]:.4f}, "
              f"Accuracy: {100.0 * totals[1] / totals[2]:.2f}%\n", flush=True)


state = hvd.elastic.TorchState(model, optimizer, train_sampler=train_sampler, epoch=1, batch=0)
state.register_reset_callbacks([on_reset])
start = time.monotonic()
train(state)
test()
if hvd.rank() == 0:
    print(f"done: {args.epochs} epoch(s), {hvd.size()} workers at the end, "
          f"{time.monotonic() - start:.1f} s", flush=True)
