"""How far an unfinished evaluation run has come: shown beside the run, never stored."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunProgress:
    """How far an unfinished run's job has come, as its job reports it."""

    stage: str
    fraction: float
