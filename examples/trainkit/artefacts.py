"""What rank 0 leaves in --work-dir: train.log (the log, also on stdout), metrics.jsonl (one JSON
object per epoch or event) and a progress bar. The other ranks write nothing and print only
warnings and errors."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any


def setup_logging(rank: int, work_dir: Path) -> logging.Logger:
    logger = logging.getLogger("train")
    logger.propagate = False
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stdout)]
    if rank == 0:
        work_dir.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(work_dir / "train.log"))
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)
    return logger


class Metrics:
    """Appends JSON lines to work_dir/metrics.jsonl on rank 0; a no-op elsewhere."""

    def __init__(self, rank: int, work_dir: Path) -> None:
        self.path = work_dir / "metrics.jsonl" if rank == 0 else None

    def write(self, record: dict[str, Any]) -> None:
        if self.path is not None:
            with open(self.path, "a") as out:
                out.write(json.dumps(record) + "\n")


class ProgressBar:
    """Rank 0's progress: redrawn in place on a terminal (at most 4 times a second), a log line
    every `interval` steps otherwise (under a launcher, output is a pipe)."""

    def __init__(self, logger: logging.Logger, enabled: bool, total: int, label: str,
                 interval: int) -> None:
        self.logger, self.enabled, self.total, self.label = logger, enabled, total, label
        self.interval = max(interval, 1)
        self.tty = enabled and sys.stdout.isatty()
        self.last_draw = 0.0

    def update(self, done: int, loss: float, lr: float) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * done // max(self.total, 1)
        text = (f"{self.label} [{'=' * filled}{' ' * (width - filled)}] {done}/{self.total} "
                f"loss {loss:.4f} lr {lr:.4g}")
        if self.tty:
            now = time.monotonic()
            if now - self.last_draw >= 0.25 or done == self.total:
                self.last_draw = now
                print("\r" + text, end="", flush=True)
        elif done % self.interval == 0 or done == self.total:
            self.logger.info(text)

    def close(self) -> None:
        if self.tty:
            print(flush=True)
