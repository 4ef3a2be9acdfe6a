"""``horovod.runner.elastic`` on kolo: the driver's settings and constants that Horovod's tests
read or patch; kolorun itself is the driver."""
