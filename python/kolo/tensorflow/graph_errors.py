"""Horovod's error class for a collective that fails inside a graph.

TensorFlow reports every Python exception of a ``tf.numpy_function`` as ``UnknownError``
(only ValueError/TypeError, StopIteration, MemoryError and NotImplementedError get classes of
their own), while Horovod's compiled ops raise ``tf.errors.FailedPreconditionError`` for a
collective that failed between ranks. kolo compiles nothing against TensorFlow, so it borrows an
op whose status code is FAILED_PRECONDITION and whose message carries run-time text:
``WriteFile`` to a path that goes *through* a regular file fails with ENOTDIR, which TensorFlow
reports as FAILED_PRECONDITION with the path in the message.

So a collective's node returns one more output, a path: ``/dev/null`` (an empty read) when it
succeeded, ``<python executable>/CollectiveFailed: <kolo's message>`` when it failed; an
empty ``WriteFile`` to it runs before the node's outputs are handed on. The caller then gets
``FailedPreconditionError: .../CollectiveFailed: rank 1: tensor 'x' ...; Not a directory``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import tensorflow as tf

# A regular file that exists and that the process may traverse: the interpreter itself.
_THROUGH_FILE = os.path.realpath(sys.executable)
SUCCEEDED = np.array(b"/dev/null", dtype=object)  # writing nothing there: a no-op
MARK = "CollectiveFailed: "
# A path longer than PATH_MAX fails with another code (ENAMETOOLONG), so the text is cut.
_MAX_TEXT = 3000


def failed(message: str) -> np.ndarray:
    """The status output of a node whose collective failed with `message`."""
    # A "/" would end the path's first component early (WriteFile then reports the directory
    # it could not create, not the text): it becomes U+2215, which reads the same.
    text = message.replace("\0", " ").replace("/", "\u2215")[:_MAX_TEXT]
    return np.array(f"{_THROUGH_FILE}/{MARK}{text}".encode(), dtype=object)


def checked(outputs: list, status) -> list:
    """`outputs`, available only after `status` was read: FailedPreconditionError if it names a
    failure."""
    # WriteFile, not ReadFile: a stateful op, which graph optimizers never prune; a stateless
    # one that only a control dependency needs may be removed, and its error with it. Writing
    # nothing to /dev/null has no effect, and the failure path fails before creating anything.
    with tf.control_dependencies([tf.io.write_file(status, "")]):
        return [tf.identity(o) for o in outputs]


def is_collective_failure(error: BaseException) -> bool:
    """Whether a TensorFlow error is a kolo collective that failed inside a graph."""
    return isinstance(error, tf.errors.FailedPreconditionError) and MARK in str(error)
