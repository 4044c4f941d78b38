"""A dependency-free progress bar for long CLI work; silent unless the stream is a terminal."""

from __future__ import annotations

import time
from typing import TextIO


class ProgressBar:
    WIDTH = 30

    def __init__(self, *, label: str, stream: TextIO, min_interval: float = 0.1,
                 unit: str = "files") -> None:
        self.label = label
        self.unit = unit
        self.stream = stream
        self.enabled = stream.isatty()
        self.min_interval = min_interval
        self._last = 0.0
        self._started = time.monotonic()
        self._drawn = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < self.min_interval:
            return
        self._last = now
        filled = int(self.WIDTH * done / total) if total else self.WIDTH
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        elapsed = now - self._started
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} {self.unit} {elapsed:.1f}s")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
