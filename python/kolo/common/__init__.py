"""The framework-neutral front-end core that ``kolo.torch`` and ``kolo.tensorflow`` share.

Each framework package is a thin adapter over these modules (Horovod's ``horovod/common`` idea,
without its duplicated per-framework ``mpi_ops.py``):

- ``basics``: joining the job, the rank/size family, build facts, the timeline, reduce ops;
- ``reduce_ops``: the legacy ``average=`` rule;
- ``objects``: broadcasting and allgathering picklable Python objects (through NumPy);
- ``grouping``: DistributedOptimizer's and DistributedGradientTape's argument and grouping rules;
- ``compression``: the compression policy (none, fp16) over a framework's cast functions.

The other shared pieces already lived below this package and stay there: the handle table
(``kolo._handles``), op naming (``kolo._name``), process sets (``kolo.process_sets``), the
exception classes (``kolo.exceptions``) and elastic state and its run loop (``kolo.elastic``).
"""
