"""``horovod.runner.common.util`` on kolo."""
