"""Checkpoints: written by rank 0 only, atomically (a killed job never leaves a torn
latest.pth), read by rank 0 and handed to every rank, so the work dir need not be shared."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

FORMAT = 1


def save(path: Path, state: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    torch.save({"format": FORMAT, **state}, temporary)
    os.replace(temporary, path)


def load_on_rank0(path: str, backend) -> dict[str, Any]:
    """rank 0 reads `path`; every rank gets its contents. A bad path fails on every rank."""
    state: Any = None
    if backend.rank == 0:
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
            if not isinstance(state, dict) or state.get("format") != FORMAT:
                state = f"{path} is not a checkpoint of this template (format {FORMAT})"
        except (OSError, RuntimeError, EOFError) as error:
            state = f"cannot read checkpoint {path}: {error}"
    state = backend.broadcast_object(state)
    if isinstance(state, str):
        raise SystemExit(f"rank {backend.rank}: {state}")
    return state
