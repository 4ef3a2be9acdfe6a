"""Keras 3 tensors of the JAX and PyTorch backends in and out of kolo's core.

PyTorch tensors enter the core as they are (kolo takes any DLPack-capable array and answers in
the caller's framework). JAX arrays are immutable, so they enter as NumPy arrays (a host copy;
on CPU ``np.asarray`` shares the buffer) and the results come back as new JAX arrays. Inside a
jitted step (Keras 3 on JAX compiles ``model.fit``'s step with ``jax.jit``) the gradients are
tracers with no values yet: the reduction is then one ordered ``io_callback`` that runs on the
host when the step runs, so every rank reaches the core in the same order."""

from __future__ import annotations

from typing import Callable

import numpy as np

import kolo


def _is_jax(array) -> bool:
    return type(array).__module__.startswith(("jax", "jaxlib"))


def _is_tracer(array) -> bool:
    import jax
    return isinstance(array, jax.core.Tracer)


def grouped_allreduce(arrays: list, name: str, op: int = kolo.Average,
                      prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> list:
    """`arrays` (all of one backend) reduced over all ranks, in that backend's type."""
    if not arrays:
        return []

    def reduce(host_arrays: list) -> list:
        # Writable copies: the core takes no read-only buffer (a JAX array's NumPy view is).
        return kolo.grouped_allreduce([np.array(a, order="C") for a in host_arrays], op=op,
                                      name=name, prescale_factor=prescale_factor,
                                      postscale_factor=postscale_factor)

    if not _is_jax(arrays[0]):
        return kolo.grouped_allreduce(list(arrays), op=op, name=name,
                                      prescale_factor=prescale_factor,
                                      postscale_factor=postscale_factor)
    return _jax_call(reduce, arrays)


def _jax_call(host_fn: Callable[[list], list], arrays: list) -> list:
    import jax
    import jax.numpy as jnp
    if any(_is_tracer(a) for a in arrays):
        from jax.experimental import io_callback
        shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        return list(io_callback(lambda *xs: [np.asarray(r, dtype=s.dtype) for r, s in zip(
            host_fn(list(xs)), shapes)], shapes, *arrays, ordered=True))
    return [jnp.asarray(r) for r in host_fn([np.asarray(a) for a in arrays])]
