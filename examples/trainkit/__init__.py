"""The pieces of examples/train.py, one job per module: config, distributed backends, data,
models, learning-rate schedule, checkpoints, rank-0 artefacts and the train/eval loops."""
