"""A minimal offline stand-in for torchvision, only what Horovod's MNIST examples import
(``datasets.MNIST``, ``transforms.Compose/ToTensor/Normalize``), so that
tests/elastic/test_horovod_example.py can run Horovod's example unchanged. The real torchvision
cannot be installed beside the CPU build of torch 2.13 that kolo uses ('operator
torchvision::nms does not exist'); the test puts this folder on PYTHONPATH only when the real
one does not import. Never downloads: the data must already be in ``root/MNIST/raw``."""

from torchvision import datasets, transforms  # noqa: F401

__version__ = "0.0+kolo.offline"
