"""DistributedOptimizer, as ``horovod.torch.optimizer``: wraps a torch optimizer so that each
gradient is averaged over all ranks while backward still runs.

A hook on every trainable parameter (``register_post_accumulate_grad_hook``, torch >= 2.1) starts
the allreduce of its gradient the moment autograd has accumulated it, so communication overlaps
the rest of backward; ``step()`` (or ``synchronize()``) waits for them and then steps.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import torch

from kolo.common.grouping import synchronize_runs_reductions
from kolo.torch.allreduce_ops import _allreduce_async, _grouped_allreduce_async
from kolo.torch import gradient_buckets
from kolo.torch.compression import Compression
from kolo.torch.mpi_ops import (  # noqa: F401  (Adasum: Horovod's optimizer module has it too)
    Adasum, Average, allreduce_async_, grouped_allreduce_async_, size, sparse_allreduce_async,
    synchronize)
from kolo.torch.process_sets import check_process_set, global_process_set

# Names Horovod's optimizer module also has (it imports them), so that importing any of them from
# horovod.torch.optimizer works as on Horovod.
from kolo.common.grouping import (  # noqa: F401  (split_list: Horovod's module has it)
    check_reduction_arguments, scale_factors, split_by_name, split_list)
from kolo.common.objects import broadcast_object  # noqa: F401
from kolo.elastic.launcher_link import elastic_mode
from kolo.torch.basics import Sum, rocm_built  # noqa: F401
from kolo.torch.process_sets import ProcessSet  # noqa: F401


def _set_size(process_set) -> int:
    return size() if check_process_set(process_set) == 0 else process_set.size()


class _DistributedOptimizer(torch.optim.Optimizer):
    """Methods grafted onto a subclass of the user's optimizer class (see DistributedOptimizer)."""

    _kolo_distributed = True

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 op=Average, gradient_predivide_factor=1.0, groups=None, sparse_as_dense=False,
                 process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        if named_parameters is not None:
            named_parameters = list(named_parameters)
        else:
            named_parameters = [(f"allreduce.noname.{i}.{j}", v)
                                for i, group in enumerate(self.param_groups)
                                for j, v in enumerate(group["params"])]
        if any(not isinstance(p, tuple) for p in named_parameters):
            raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                             "usually produced by model.named_parameters().")
        names = [k for k, _ in named_parameters]
        dups = sorted({k for k in names if names.count(k) > 1})
        if dups:
            raise ValueError("Parameter names in named_parameters must be unique. "
                             "Found duplicates: " + ", ".join(dups))
        all_ids = {id(v) for group in self.param_groups for v in group["params"]}
        unnamed = all_ids - {id(v) for _, v in named_parameters}
        if unnamed:
            raise ValueError("named_parameters was specified, but one or more model parameters "
                             "were not named. Python object ids: "
                             + ", ".join(str(i) for i in unnamed))

        self._parameter_names = {v: k for k, v in sorted(named_parameters, key=lambda kv: kv[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {v: backward_passes_per_step for _, v in named_parameters}
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        if process_set is None:
            process_set = global_process_set
        self.process_set = process_set
        check_process_set(process_set)

        self._handles: dict = {}
        self._hook_handles: list = []
        self._requires_update: set = set()
        self._synchronized = False
        self._driving = None  # synchronize_runs_reductions(), decided at each step's first
        self._should_synchronize = True
        self._groups = groups
        self._p_to_group: dict = {}
        self._group_counts: dict = {}
        # A rank outside the set has nothing to reduce; a set of one rank nothing to exchange,
        # unless the job is elastic (as Horovod): a job of one worker may grow, and a worker
        # without hooks would then submit nothing while its new peers reduce their gradients.
        # Without groups, gradient buckets are considered once, after the first step
        # (gradient_buckets.py: only where every gradient goes to the shared-GPU path).
        self._buckets_undecided = False
        if process_set.included() and (_set_size(process_set) > 1 or elastic_mode()):
            self._register_hooks()
            self._buckets_undecided = groups is None

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    def set_backward_passes_per_step(self, passes: int) -> None:
        """Changes how many backward passes accumulate locally before gradients are reduced."""
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _trainable(self) -> list:
        return [p for group in self.param_groups for p in group["params"] if p.requires_grad]

    def _register_hooks(self) -> None:
        if self._groups is not None:
            if isinstance(self._groups, list):
                p_groups = [tuple(p for p in g if p.requires_grad) for g in self._groups]
            else:
                # Same order on every rank: by name, which every rank derives identically.
                p_groups = [tuple(g) for g in split_by_name(
                    self._trainable(), self._parameter_names.__getitem__, self._groups)]
            for group in p_groups:
                if not group:
                    continue
                for p in group:
                    self._p_to_group[p] = group
                self._group_counts[group] = 0
        for p in self._trainable():
            self._requires_update.add(p)
            self._hook_handles.append(p.register_post_accumulate_grad_hook(self._make_hook(p)))

    def _scale_factors(self) -> tuple[float, float]:
        return scale_factors(self.op, self.gradient_predivide_factor)

    def _drives_reductions(self) -> bool:
        # Decided once per step (an elastic reset may change it between steps).
        if self._driving is None:
            self._driving = synchronize_runs_reductions()
        return self._driving

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            # Not computed here (e.g. an unused branch), maybe computed on another rank:
            # contribute zeros so the allreduce still matches on every rank.
            p.grad = torch.zeros_like(p)
        name = self._parameter_names.get(p)
        grad = p.grad
        if grad.is_sparse:
            if not self.sparse_as_dense:
                return sparse_allreduce_async(grad, name, self.op, self.process_set), None
            # Reduced densely; p.grad stays sparse (SparseAdam refuses dense gradients).
            grad = grad.to_dense()
        compressed, ctx = self._compression.compress(grad)
        prescale, postscale = self._scale_factors()
        handle = _allreduce_async(compressed, None, name, self.op, prescale, postscale,
                                  self.process_set, self._drives_reductions())
        return handle, (compressed, ctx)

    def _grouped_allreduce_grad_async(self, group):
        for p in group:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        name = self._parameter_names.get(group[0])
        compressed, ctxs = zip(*[self._compression.compress(p.grad) for p in group])
        prescale, postscale = self._scale_factors()
        handle = _grouped_allreduce_async(list(compressed), [None] * len(group), name, self.op,
                                          prescale, postscale, self.process_set,
                                          self._drives_reductions())
        return handle, list(zip(compressed, ctxs))

    def _make_hook(self, p):
        def hook(*ignore):
            if p in self._handles and self._handles[p][0] is not None:
                if self._allreduce_delay[p] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than backward_passes_per_step times before "
                        "call to step(). Increase backward_passes_per_step to accumulate "
                        "gradients locally.")
            assert not p.grad.requires_grad
            assert self._allreduce_delay[p] > 0
            handle, ctx = None, None
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] == 0:
                group = self._p_to_group.get(p)
                if group is not None:
                    self._group_counts[group] += 1
                    if self._group_counts[group] == len(group):
                        self._handles[group] = self._grouped_allreduce_grad_async(group)
                        for member in group:
                            self._handles.pop(member, None)
                        self._group_counts[group] = 0
                    else:
                        self._handles[p] = (None, None)
                    return
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def _finish(self, p, output, ctx) -> None:
        self._allreduce_delay[p] = self.backward_passes_per_step
        compressed, cctx = ctx if ctx is not None else (None, None)
        result = self._compression.decompress(output, cctx) if ctx is not None else output
        if p.grad.is_sparse:
            p.grad = result if result.is_sparse else result.to_sparse()
        elif result is not p.grad:
            p.grad.copy_(result)

    def synchronize(self) -> None:
        """Waits for every gradient's allreduce (starting those that no hook started: unused
        parameters, or partial groups) and writes the averaged gradients into ``p.grad``."""
        # Every group and every trainable parameter is reduced at every step, whether or not its
        # hook fired here: another rank may have computed that gradient (dynamic graphs).
        for group in self._group_counts:
            if group not in self._handles:
                for member in group:
                    self._handles.pop(member, None)
                self._handles[group] = self._grouped_allreduce_grad_async(group)
                self._group_counts[group] = 0
        for p in sorted(self._requires_update, key=lambda q: self._parameter_names[q]):
            if p not in self._p_to_group and self._handles.get(p, (None,))[0] is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for key, (handle, ctx) in self._handles.items():
            if isinstance(key, tuple):
                outputs = synchronize(handle)
                for p, output, pctx in zip(key, outputs, ctx):
                    self._finish(p, output, pctx)
            elif callable(handle):
                self._allreduce_delay[key] = self.backward_passes_per_step
                key.grad = handle()
            else:
                self._finish(key, synchronize(handle), ctx)
        self._handles.clear()
        self._synchronized = True
        self._driving = None
        if self._buckets_undecided:
            self._buckets_undecided = False
            self._adopt_buckets()

    def _adopt_buckets(self) -> None:
        """Gradient buckets from now on, where gradient_buckets.applies (the same decision and
        the same buckets on every rank)."""
        prescale, postscale = self._scale_factors()
        params = self._trainable()
        if not gradient_buckets.applies(params, self.op, prescale * postscale):
            return
        sparse = gradient_buckets.sparse_anywhere(params, self.process_set)
        dense = [p for p in reversed(params) if p not in sparse]
        for bucket in gradient_buckets.plan(dense, gradient_buckets.cap_bytes()):
            if len(bucket) < 2:
                continue  # alone, it stays an allreduce of its own
            for p in bucket:
                self._p_to_group[p] = bucket
            self._group_counts[bucket] = 0

    @contextmanager
    def skip_synchronize(self):
        """Within this context ``step()`` does not synchronize: use it after calling
        ``synchronize()`` yourself (e.g. to clip the averaged gradients)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.", stacklevel=2)
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none: bool = True):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(set_to_none)


def step_locally(optimizer: torch.optim.Optimizer) -> None:
    """One step of `optimizer` on this rank's gradients as they are: a DistributedOptimizer's
    own step() would wait for every rank to reduce its gradients."""
    # torch patches each optimizer class's step() (hooks), so the class is recognised by a
    # marker; super() skips the DistributedOptimizer layer to the user's optimizer class.
    if getattr(type(optimizer), "_kolo_distributed", False):
        super(type(optimizer), optimizer).step()
    else:
        optimizer.step()


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps `optimizer` so that gradients are averaged (``op``) over all ranks before each step.

    Allreduces start from hooks while backward runs; ``step()`` waits for them. Call
    ``synchronize()`` then step inside ``skip_synchronize()`` to modify averaged gradients first
    (clipping). With ``backward_passes_per_step=k``, gradients accumulate locally over k backward
    passes before being reduced. ``groups`` (an int, or lists of parameters) fuses gradients into
    grouped allreduces; ``num_groups`` is its deprecated name. ``gradient_predivide_factor``
    splits the averaging before and after the sum. Sparse gradients are allgathered unless
    ``sparse_as_dense``. With ``op=hvd.Adasum`` each gradient is combined with the Adasum
    reduction (comm/adasum.cc) instead of averaged; gradient_predivide_factor then must stay 1
    (as in Horovod, it only applies to Average).
    """
    groups = check_reduction_arguments(op, gradient_predivide_factor, num_groups, groups,
                                       lambda p: isinstance(p, torch.Tensor), "torch.Tensor")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
               gradient_predivide_factor, groups, sparse_as_dense, process_set)
