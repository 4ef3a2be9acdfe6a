"""``horovod.runner.common`` on kolo: the helpers Horovod's tests import."""
