"""``horovod.common`` on kolo: the pieces scripts import directly."""
