"""How both Keras front ends (kolo.tensorflow.keras, kolo.keras) make a DistributedOptimizer: a
new subclass of the user's optimizer class with the methods of a mixin grafted on, built from
the user's optimizer's configuration."""

from __future__ import annotations


def distributed_copy(optimizer, mixin: type, name, drop: tuple = ()):
    """A new optimizer of a subclass of `optimizer`'s class carrying `mixin`'s methods (less
    `drop`), with the same configuration (and `name`, if given)."""
    base = type(optimizer)
    methods = {k: v for k, v in mixin.__dict__.items()
               if k not in ("__dict__", "__weakref__", *drop)}
    # The user's class's name and module: a saved model records the plain Keras optimizer, which
    # loads anywhere (load_model wraps it again).
    methods["__module__"] = base.__module__
    cls = type(base.__name__, (base,), methods)
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    return cls.from_config(config)
