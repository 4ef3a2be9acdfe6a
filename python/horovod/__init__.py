"""`horovod` on kolo: existing Horovod scripts run unchanged (``import horovod.torch as hvd``)."""

from kolo import __version__  # noqa: F401
from horovod.runner import run  # noqa: F401
