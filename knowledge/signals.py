"""What knowledge tells the apps above it, which it does not import (tests/test_architecture.py).

`chunks_committed` is sent once a run that wrote chunks or vectors of some knowledge bases has
committed (an ingest, an upload's or a reindex's build, a delete), with `knowledge_base_ids`:
the search index (index/) brings those bases' indexes up to date. A receiver's failure must not
fail the run: the run's data is committed, and searches stay exact without the index."""

from __future__ import annotations

from django.dispatch import Signal

chunks_committed = Signal()

