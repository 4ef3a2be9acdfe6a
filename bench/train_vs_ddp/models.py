"""The three networks bench/train_vs_ddp trains, and a learnable synthetic task for each.

Every task is a fixed random data distribution drawn from the seed, so the loss falls and
the accuracy rises within a few dozen steps, and two runs from the same seed see the same data
(convergence is comparable between kolo and DDP). The global batch of a step is drawn once and
cut into per-rank slices, so every runner at the same rank count trains on the same samples.

- `mlp`: the synthetic benchmark's MLP (784-1024-1024-10, 3 weight/bias pairs, 1.9 M parameters)
  on a mixture of 10 Gaussians (a random prototype per class plus noise).
- `cnn`: the synthetic benchmark's small CNN (two 3x3 convolutions with pooling, two linear
  layers, 1.1 M parameters) on 3x32x32 (CIFAR-sized) images: a smooth random prototype per
  class plus noise.
- `transformer`: a small GPT-style language model (4 pre-norm blocks, d_model 128, 4 heads,
  separate q/k/v/out projections: 70 parameter tensors from 512 B to 256 KiB, as real language
  models have many tensors of mixed sizes; 0.87 M parameters) on sequences of 64 tokens from a
  random sparse Markov chain over 256 tokens; accuracy is next-token top-1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

# The MLP and CNN are the synthetic benchmark's, so both benchmarks measure the same networks.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pytorch_synthetic_benchmark import build as build_benchmark_model  # noqa: E402

MODELS = ("mlp", "cnn", "transformer")
CLASSES = 10
VOCAB, SEQ_LEN = 256, 64
# Each token of the Markov chain has this many possible successors: enough to be a task, few
# enough that a small model learns it in tens of steps.
SUCCESSORS = 4
# mlp and cnn inputs are a class's prototype plus unit Gaussian noise; the prototypes' scale sets
# how separable the classes are: chosen so that 50 steps of batch 64 at lr 0.05 reach about 60%
# (mlp) and 80% (cnn) held-out accuracy, still rising (the curves show differences, if any).
PROTOTYPE_SCALE = {"mlp": 0.1, "cnn": 0.12}


class Block(nn.Module):
    """One pre-norm transformer block with causal self-attention."""

    def __init__(self, d_model: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d_model)
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff_in = nn.Linear(d_model, ff)
        self.ff_out = nn.Linear(ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.norm1(x)

        def heads(proj: nn.Linear) -> torch.Tensor:
            return proj(h).view(b, t, self.heads, d // self.heads).transpose(1, 2)

        attn = F.scaled_dot_product_attention(heads(self.q), heads(self.k), heads(self.v),
                                              is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.ff_out(F.gelu(self.ff_in(self.norm2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = VOCAB, seq_len: int = SEQ_LEN, d_model: int = 128,
                 layers: int = 4, heads: int = 4, ff: int = 512) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.zeros(seq_len, d_model))
        nn.init.normal_(self.position, std=0.02)
        self.blocks = nn.ModuleList(Block(d_model, heads, ff) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def build(name: str) -> nn.Module:
    if name == "transformer":
        return TinyGPT()
    model, _, _ = build_benchmark_model(name)
    return model


class Task:
    """Batches of (input, target) for `name`, drawn from `seed`; loss() and accuracy() of a
    model's output against the targets."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.generator = torch.Generator().manual_seed(seed + 1)  # the model's init uses `seed`
        g = self.generator
        if name == "mlp":
            self.prototypes = torch.randn(CLASSES, 784, generator=g) * PROTOTYPE_SCALE[name]
        elif name == "cnn":
            # Smooth images (4x4 patterns upsampled), as natural images are.
            coarse = torch.randn(CLASSES, 3, 4, 4, generator=g) * PROTOTYPE_SCALE[name]
            self.prototypes = F.interpolate(coarse, size=(32, 32), mode="bilinear")
        elif name == "transformer":
            successors = torch.randint(0, VOCAB, (VOCAB, SUCCESSORS), generator=g)
            weights = torch.rand(VOCAB, SUCCESSORS, generator=g) + 0.2
            self.transitions = torch.zeros(VOCAB, VOCAB).scatter_add_(1, successors, weights)
        else:
            raise ValueError(f"unknown model '{name}' (one of {', '.join(MODELS)})")

    def batch(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = self.generator
        if self.name in ("mlp", "cnn"):
            y = torch.randint(0, CLASSES, (size,), generator=g)
            noise = torch.randn(size, *self.prototypes.shape[1:], generator=g)
            return self.prototypes[y] + noise, y
        tokens = torch.empty(size, SEQ_LEN + 1, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, VOCAB, (size,), generator=g)
        for t in range(SEQ_LEN):
            tokens[:, t + 1] = torch.multinomial(self.transitions[tokens[:, t]], 1,
                                                 generator=g).squeeze(1)
        return tokens[:, :-1], tokens[:, 1:]

    def loss(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(output.reshape(-1, output.shape[-1]), target.reshape(-1))

    @staticmethod
    def accuracy(output: torch.Tensor, target: torch.Tensor) -> float:
        return (output.argmax(-1) == target).float().mean().item()
