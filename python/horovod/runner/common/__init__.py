"""``horovod.runner.common`` on kolo: the helpers scripts and Horovod's tests import."""
