"""What knowledge tells the apps above it, which it does not import (tests/test_architecture.py).

`chunks_committed` is sent once a run that wrote chunks or vectors of some knowledge bases has
committed (an ingest, an upload's or a reindex's build, a delete), with `knowledge_base_ids`:
the search index (index/) brings those bases' indexes up to date. A receiver's failure must not
fail the run: the run's data is committed, and searches stay exact without the index."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.dispatch import Signal

from core.config import Config

chunks_committed = Signal()

# /health's sections of the apps above (`search_index`): name -> a function of (config, the
# caller's base ids or None without a caller, admin) giving JSON values.
HealthSection = Callable[..., dict[str, Any]]
_health_sections: dict[str, HealthSection] = {}


def health_section_register(name: str, section: HealthSection) -> None:
    _health_sections[name] = section


def health_sections(*, config: Config, knowledge_base_ids: list[int] | None,
                    admin: bool) -> dict[str, dict[str, Any]]:
    """Every registered section, as /health's details hold them."""
    return {name: section(config=config, knowledge_base_ids=knowledge_base_ids, admin=admin)
            for name, section in _health_sections.items()}

