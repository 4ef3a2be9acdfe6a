"""Elastic training, framework-free (``horovod.common.elastic``): the state kept across resets
and the loop that resets the job when workers are lost or hosts change. ``kolo.torch.elastic``
(``hvd.elastic``) builds PyTorch's ``run``, ``TorchState`` and ``ElasticSampler`` on it, and
``kolo.tensorflow.elastic`` TensorFlow's ``run``, ``TensorFlowState`` and the Keras states."""

from kolo.elastic.launcher_link import HostUpdateResult
from kolo.elastic.run_loop import ResetLimitExceeded, run_fn
from kolo.elastic.state import ObjectState, State

__all__ = ["HostUpdateResult", "ObjectState", "ResetLimitExceeded", "State", "run_fn"]
