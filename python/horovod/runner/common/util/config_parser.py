"""``horovod.runner.common.util.config_parser.set_env_from_args``: Horovod turns its tuning
flags into HOROVOD_* variables here; kolorun reads the same flags from the command line that
``horovod.runner.launch.parse_args`` keeps whole, so there is nothing to add to `env`."""


def set_env_from_args(env, args):
    return env
