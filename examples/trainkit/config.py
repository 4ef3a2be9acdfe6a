"""Training configuration: a Python file (as MMEngine's `configs/*.py`) or a YAML file whose
top-level names are the sections below, merged over the defaults, then `--cfg-options` overrides
such as `data.train_subset=2000 schedule.epochs=3`. Unknown sections or keys are errors naming the
file and the key, so a typo never silently trains with a default."""

from __future__ import annotations

import ast
import copy
import runpy
import types
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, dict[str, Any]] = {
    # type: cnn | mlp | transformer (models.py); other keys go to the model's constructor.
    "model": {"type": "cnn"},
    "data": {
        "type": "fashion_mnist",  # or "synthetic" (random inputs, labels from a fixed teacher)
        "root": None,  # IDX files; default: Debian's dataset-fashion-mnist
        "train_subset": None,  # first N training samples only (quick runs, tests)
        "test_subset": None,
        "batch_size": 64,  # per rank
        "test_batch_size": 500,
        "num_workers": 0,
        "input_shape": [1, 28, 28],  # synthetic only
        "num_classes": 10,  # synthetic only
        "train_size": 8192,  # synthetic only
        "test_size": 2048,  # synthetic only
    },
    "optimizer": {"type": "SGD", "lr": 0.01, "momentum": 0.9, "weight_decay": 0.0},
    # LR at epoch progress p: linear warm-up over warmup_epochs from lr to lr x world size
    # (--auto-scale-lr; without it there is nothing to warm up to), then constant or cosine decay.
    "schedule": {"epochs": 10, "warmup_epochs": 1.0, "policy": "cosine"},
    "train": {
        "log_interval": 50,  # steps between progress lines when stdout is not a terminal
        "checkpoint_interval": 1,  # epochs between epoch_N.pth files (latest.pth every epoch)
        "checkpoint_every_steps": 0,  # > 0: also latest.pth mid-epoch (with the sampler position)
        "max_steps_per_epoch": None,
        "eval_on_resume": False,  # evaluate the restored model before training on
        "threads": None,  # torch threads per rank; default: this host's CPUs / ranks on it
    },
}


class ConfigError(ValueError):
    pass


def _parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a bare word: a string


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    if path.suffix == ".py":
        names = runpy.run_path(str(path))
        helpers = (types.ModuleType, types.FunctionType, type)  # imports and functions it defines
        return {k: v for k, v in names.items()
                if not k.startswith("_") and not isinstance(v, helpers)}
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as error:
            raise ConfigError(f"{path}: YAML configs need PyYAML (pip install pyyaml)") from error
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        return loaded
    raise ConfigError(f"{path}: a config is a .py or .yaml file")


# Constructor arguments: open-ended, and a file's section replaces the default one whole (an
# AdamW must not inherit SGD's momentum). The other sections are closed sets of keys.
OPEN_SECTIONS = ("model", "optimizer")


def _merge(into: dict[str, dict[str, Any]], update: dict[str, Any], origin: str,
           replace_open: bool) -> None:
    for section, values in update.items():
        if section not in into:
            raise ConfigError(f"{origin}: unknown section '{section}' "
                              f"(sections: {', '.join(into)})")
        if not isinstance(values, dict):
            raise ConfigError(f"{origin}: section '{section}' must be a dict")
        if section in OPEN_SECTIONS:
            if replace_open:
                if "type" not in values:
                    raise ConfigError(f"{origin}: section '{section}' needs a 'type'")
                into[section] = {}
        else:
            for key in values:
                if key not in into[section]:
                    raise ConfigError(f"{origin}: unknown key '{section}.{key}' "
                                      f"(known: {', '.join(into[section])})")
        into[section].update(values)


def load_config(path: str | None, overrides: list[str] = ()) -> dict[str, dict[str, Any]]:
    config = copy.deepcopy(DEFAULTS)
    if path:
        _merge(config, _read(Path(path)), str(path), replace_open=True)
    for item in overrides:
        dotted, sep, text = item.partition("=")
        section, dot, key = dotted.partition(".")
        if not sep or not dot:
            raise ConfigError(f"--cfg-options: '{item}' is not section.key=value")
        _merge(config, {section: {key: _parse_value(text)}}, "--cfg-options",
               replace_open=False)
    return config
