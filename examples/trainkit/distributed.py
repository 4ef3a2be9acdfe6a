"""The two ways the template runs data-parallel: Horovod's API (kolo under kolorun, horovodrun or
mpirun; Horovod itself too) or torch DDP under torchrun. Both expose the same few calls, so the
training loop is one piece of code and the comparison is fair."""

from __future__ import annotations

import os
from typing import Any

import torch


class HorovodBackend:
    """`import horovod.torch as hvd`: resolves to kolo.torch when kolo is installed."""

    name = "horovod"

    def __init__(self) -> None:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "TORCHELASTIC_RUN_ID" in os.environ:
            raise SystemExit("started by torchrun: pass --launcher ddp (kolorun, horovodrun and "
                             "mpirun start the default --launcher horovod)")
        import horovod.torch as hvd

        hvd.init()
        self.hvd = hvd
        self.rank, self.size = hvd.rank(), hvd.size()
        self.local_rank, self.local_size = hvd.local_rank(), hvd.local_size()
        self.hosts = hvd.cross_size()  # ranks with this local rank: one per host

    def wrap(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer):
        optimizer = self.hvd.DistributedOptimizer(optimizer,
                                                  named_parameters=model.named_parameters())
        return model, optimizer

    def sync_initial_state(self, model: torch.nn.Module, optimizer) -> None:
        """Every rank starts from rank 0's weights and optimizer state (Horovod's recipe)."""
        self.hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        self.hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    @staticmethod
    def unwrap(model: torch.nn.Module) -> torch.nn.Module:
        return model

    def step(self, optimizer, scaler) -> None:
        if scaler.is_enabled():
            # Gradients are allreduced scaled; unscale the averaged ones, then step without a
            # second synchronization (Horovod's AMP recipe).
            optimizer.synchronize()
            scaler.unscale_(optimizer)
            with optimizer.skip_synchronize():
                scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()

    def allreduce(self, values: list[float], op: str) -> list[float]:
        tensor = torch.tensor(values, dtype=torch.float64)
        reduce_op = self.hvd.Sum if op == "sum" else self.hvd.Max
        name = f"trainkit.{op}.{len(values)}"
        return self.hvd.allreduce(tensor, op=reduce_op, name=name).tolist()

    def broadcast_object(self, obj: Any) -> Any:
        return self.hvd.broadcast_object(obj, root_rank=0, name="trainkit.object")

    def barrier(self) -> None:
        self.hvd.barrier()

    def shutdown(self) -> None:
        self.hvd.shutdown()


class DDPBackend:
    """torch.distributed under torchrun: DDP's reducer averages the gradients."""

    name = "ddp"

    def __init__(self) -> None:
        import torch.distributed as dist

        if "RANK" not in os.environ:
            raise SystemExit("--launcher ddp needs torchrun (RANK, WORLD_SIZE, MASTER_ADDR unset)")
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        self.dist = dist
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.local_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        self.hosts = self.size // self.local_size  # torchrun runs as many ranks on every host

    def wrap(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer):
        device_ids = [self.local_rank] if torch.cuda.is_available() else None
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids), optimizer

    def sync_initial_state(self, model: torch.nn.Module, optimizer) -> None:
        # DDP broadcast rank 0's parameters when it wrapped the model; a restored optimizer
        # state came to every rank from rank 0 already (broadcast_object).
        for tensor in model.state_dict().values():
            self.dist.broadcast(tensor, src=0)

    @staticmethod
    def unwrap(model: torch.nn.Module) -> torch.nn.Module:
        return model.module

    @staticmethod
    def step(optimizer, scaler) -> None:
        scaler.step(optimizer)
        scaler.update()

    def allreduce(self, values: list[float], op: str) -> list[float]:
        tensor = torch.tensor(values, dtype=torch.float64)
        if torch.cuda.is_available():
            tensor = tensor.cuda()
        reduce_op = self.dist.ReduceOp.SUM if op == "sum" else self.dist.ReduceOp.MAX
        self.dist.all_reduce(tensor, op=reduce_op)
        return tensor.cpu().tolist()

    def broadcast_object(self, obj: Any) -> Any:
        box = [obj]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        self.dist.barrier()

    def shutdown(self) -> None:
        self.dist.destroy_process_group()


def start(launcher: str):
    return DDPBackend() if launcher == "ddp" else HorovodBackend()
