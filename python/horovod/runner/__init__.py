"""``horovod.runner`` on kolo: ``run`` starts a function on every rank through kolorun."""

from kolo.runner import run  # noqa: F401
