"""``horovod.runner.gloo_run._get_min_start_hosts``, which Horovod's elastic tests patch: kolorun
starts a job on whatever hosts hold --min-np slots (it needs no second host to find common
network interfaces), so the answer is 1."""


def _get_min_start_hosts(settings=None):
    return 1
