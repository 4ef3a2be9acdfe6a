"""``horovod.runner.elastic.driver``'s two settings, as module attributes that tests patch.
``horovod.runner.launch._run_elastic`` reads them when it starts kolorun:
``ELASTIC_TIMEOUT_SECS`` is the default --elastic-timeout (HOROVOD_ELASTIC_TIMEOUT wins over it,
as in Horovod), ``DISCOVER_HOSTS_FREQUENCY_SECS`` kolorun's discovery interval
(HOROVOD_ELASTIC_DISCOVERY_INTERVAL)."""

import os

DISCOVER_HOSTS_FREQUENCY_SECS = 1.0
ELASTIC_TIMEOUT_SECS = 600


def elastic_timeout_seconds() -> float:
    text = os.environ.get("HOROVOD_ELASTIC_TIMEOUT")
    return float(text) if text else float(ELASTIC_TIMEOUT_SECS)


def discovery_environment() -> dict:
    return {"HOROVOD_ELASTIC_DISCOVERY_INTERVAL": repr(float(DISCOVER_HOSTS_FREQUENCY_SECS))}
