"""``horovod.runner.util`` on kolo: the helpers Horovod's own test utilities import."""
