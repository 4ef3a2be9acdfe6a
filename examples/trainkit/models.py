"""The template's models, by config `model.type`; other `model` keys are constructor arguments.
`mlp` is the training benchmark's MLP (examples/pytorch_synthetic_benchmark.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/
from pytorch_synthetic_benchmark import build as build_benchmark_model  # noqa: E402


class FashionCNN(nn.Module):
    """Two 3x3 convolutions and two linear layers for 1x28x28 images."""

    def __init__(self, num_classes: int = 10, width: int = 32, dropout: float = 0.25) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc1 = nn.Linear(2 * width * 7 * 7, 128)
        self.fc2 = nn.Linear(128, num_classes)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.dropout(F.relu(self.fc1(x.flatten(1))), self.dropout, self.training)
        return self.fc2(x)


class RowTransformer(nn.Module):
    """A small transformer encoder reading an image as a sequence of its rows (28 tokens of 28
    pixels for Fashion-MNIST), mean-pooled into a classifier."""

    def __init__(self, num_classes: int = 10, tokens: int = 28, token_dim: int = 28,
                 d_model: int = 64, heads: int = 4, layers: int = 2, ff: int = 128,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.embed = nn.Linear(token_dim, d_model)
        self.position = nn.Parameter(torch.zeros(1, tokens, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)
        self.tokens, self.token_dim = tokens, token_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x.reshape(x.shape[0], self.tokens, self.token_dim)) + self.position
        return self.head(self.norm(self.encoder(x).mean(1)))


def build_model(cfg: dict[str, Any]) -> nn.Module:
    kwargs = {k: v for k, v in cfg.items() if k != "type"}
    if cfg["type"] == "cnn":
        return FashionCNN(**kwargs)
    if cfg["type"] == "transformer":
        return RowTransformer(**kwargs)
    if cfg["type"] == "mlp":
        if kwargs:
            raise ValueError(f"model.type mlp takes no arguments, got {sorted(kwargs)}")
        return nn.Sequential(nn.Flatten(), build_benchmark_model("mlp")[0])
    raise ValueError(f"model.type '{cfg['type']}' is not one of cnn, mlp, transformer")
