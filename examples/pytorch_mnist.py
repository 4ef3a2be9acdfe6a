"""Horovod's PyTorch MNIST example, running on kolo unchanged but for the data loading.

    kolorun -np 2 python3 examples/pytorch_mnist.py --epochs 1
    horovodrun -np 2 python3 examples/pytorch_mnist.py --epochs 1      # same thing

Reads MNIST-format IDX files (optionally gzipped) from --data-dir; by default the Fashion-MNIST
files that Debian's dataset-fashion-mnist package installs (scripts/setup.sh installs it). It
never downloads anything. Switch `import horovod.torch as hvd` for `import kolo.torch as hvd`:
both are the same module.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data.distributed

import horovod.torch as hvd
from mnist_idx import DEFAULT_DATA_DIR, load_split

parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
parser.add_argument("--batch-size", type=int, default=64, metavar="N",
                    help="input batch size for training (default: 64)")
parser.add_argument("--test-batch-size", type=int, default=1000, metavar="N",
                    help="input batch size for testing (default: 1000)")
parser.add_argument("--epochs", type=int, default=10, metavar="N",
                    help="number of epochs to train (default: 10)")
parser.add_argument("--lr", type=float, default=0.01, metavar="LR",
                    help="learning rate (default: 0.01)")
parser.add_argument("--momentum", type=float, default=0.5, metavar="M",
                    help="SGD momentum (default: 0.5)")
parser.add_argument("--no-cuda", action="store_true", default=False,
                    help="disables CUDA training")
parser.add_argument("--seed", type=int, default=42, metavar="S",
                    help="random seed (default: 42)")
parser.add_argument("--log-interval", type=int, default=10, metavar="N",
                    help="how many batches to wait before logging training status")
parser.add_argument("--fp16-allreduce", action="store_true", default=False,
                    help="use fp16 compression during allreduce")
parser.add_argument("--use-adasum", action="store_true", default=False,
                    help="use adasum algorithm to do reduction")
parser.add_argument("--gradient-predivide-factor", type=float, default=1.0,
                    help="apply gradient predivide factor in optimizer (default: 1.0)")
parser.add_argument("--data-dir",
                    help="location of the training dataset (MNIST IDX files); default: "
                         f"Fashion-MNIST in {DEFAULT_DATA_DIR}")
parser.add_argument("--max-steps", type=int, default=None,
                    help="stop each epoch after this many batches (bounds the run time)")
parser.add_argument("--checkpoint-dir", default=None,
                    help="rank 0 saves the model here after every epoch")


def load_dataset(data_dir: str, train: bool) -> torch.utils.data.TensorDataset:
    images, labels = load_split(data_dir, train)
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - 0.5) / 0.5  # roughly zero mean, unit range for both MNIST and Fashion-MNIST
    return torch.utils.data.TensorDataset(x, torch.from_numpy(labels.astype(np.int64)))


class Net(nn.Module):
    """Horovod's example network, a little wider and with lighter dropout so that one epoch of
    Fashion-MNIST (harder than MNIST) gets past 80% test accuracy."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=5)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=5)
        self.fc1 = nn.Linear(512, 100)
        self.fc2 = nn.Linear(100, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 512)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=0.25, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class ProgressBar:
    """A one-line text progress bar (rank 0 only), redrawn at most every 0.5 s."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.last = total, label, 0.0
        self.tty = sys.stdout.isatty()

    def update(self, done: int, loss: float) -> None:
        now = time.monotonic()
        if now - self.last < 0.5 and done < self.total:
            return
        self.last = now
        width = 30
        filled = width * done // max(self.total, 1)
        bar = "=" * filled + (">" if filled < width else "") + " " * (width - filled - 1)
        line = f"{self.label} [{bar}] {done}/{self.total} loss {loss:.4f}"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", flush=True)

    def close(self) -> None:
        if self.tty:
            print(flush=True)


def train(epoch):
    model.train()
    # Horovod: set epoch to sampler for shuffling.
    train_sampler.set_epoch(epoch)
    steps = len(train_loader) if args.max_steps is None else min(args.max_steps, len(train_loader))
    bar = ProgressBar(steps, f"epoch {epoch}") if hvd.rank() == 0 else None
    for batch_idx, (data, target) in enumerate(train_loader):
        if batch_idx >= steps:
            break
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if bar is not None:
            bar.update(batch_idx + 1, loss.item())
        if batch_idx % args.log_interval == 0 and hvd.rank() == 0 and not sys.stdout.isatty():
            # Horovod: use train_sampler to determine the number of examples in this worker's
            # partition.
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_sampler),
                100.0 * batch_idx / len(train_loader), loss.item()))
    if bar is not None:
        bar.close()


def metric_average(val, name):
    tensor = torch.tensor(val)
    avg_tensor = hvd.allreduce(tensor, name=name)
    return avg_tensor.item()


def test():
    model.eval()
    test_loss = 0.0
    test_accuracy = 0.0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            # sum up batch loss
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            # get the index of the max log-probability
            pred = output.data.max(1, keepdim=True)[1]
            test_accuracy += pred.eq(target.data.view_as(pred)).float().sum().item()

    # Horovod: use test_sampler to determine the number of examples in this worker's partition.
    test_loss /= len(test_sampler)
    test_accuracy /= len(test_sampler)

    # Horovod: average metric values across workers.
    test_loss = metric_average(test_loss, "avg_loss")
    test_accuracy = metric_average(test_accuracy, "avg_accuracy")

    # Horovod: print output only on first rank.
    if hvd.rank() == 0:
        print("\nTest set: Average loss: {:.4f}, Accuracy: {:.2f}%\n".format(
            test_loss, 100.0 * test_accuracy), flush=True)
    return test_accuracy


if __name__ == "__main__":
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available() and hvd.nccl_built()

    # Horovod: initialize library.
    hvd.init()
    torch.manual_seed(args.seed)

    # Horovod: limit # of CPU threads to be used per worker.
    torch.set_num_threads(1)

    data_dir = args.data_dir or DEFAULT_DATA_DIR
    train_dataset = load_dataset(data_dir, train=True)
    # Horovod: use DistributedSampler to partition the training data.
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_dataset, num_replicas=hvd.size(), rank=hvd.rank())
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, sampler=train_sampler)

    test_dataset = load_dataset(data_dir, train=False)
    # Horovod: use DistributedSampler to partition the test data.
    test_sampler = torch.utils.data.distributed.DistributedSampler(
        test_dataset, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
    test_loader = torch.utils.data.DataLoader(test_dataset, batch_size=args.test_batch_size,
                                              sampler=test_sampler)

    model = Net()

    # By default, Adasum doesn't need scaling up learning rate.
    lr_scaler = hvd.size() if not args.use_adasum else 1

    # Horovod: scale learning rate by lr_scaler.
    optimizer = optim.SGD(model.parameters(), lr=args.lr * lr_scaler, momentum=args.momentum)

    # Horovod: broadcast parameters & optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    # Horovod: (optional) compression algorithm.
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none

    # Horovod: wrap optimizer with DistributedOptimizer.
    optimizer = hvd.DistributedOptimizer(optimizer,
                                         named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average,
                                         gradient_predivide_factor=args.gradient_predivide_factor)

    start = time.monotonic()
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        accuracy = test()
        if args.checkpoint_dir and hvd.rank() == 0:
            os.makedirs(args.checkpoint_dir, exist_ok=True)
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict()},
                       os.path.join(args.checkpoint_dir, f"checkpoint-{epoch}.pt"))
    if hvd.rank() == 0:
        print(f"done: {args.epochs} epoch(s) on {hvd.size()} rank(s) in "
              f"{time.monotonic() - start:.1f} s, test accuracy {100.0 * accuracy:.2f}%",
              flush=True)
