"""The deterministic `fake-lexical-v1` embedder: no model, no network.

It hashes lexical tokens into 1024 buckets. Its exact arithmetic is a contract:
other components and tests compare its vectors value for value, so any change here needs a new
model name.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from core.embedding_providers import FAKE_MODEL
from embeddings.base import ChunkText

FAKE_DIM = 1024

_SEPARATOR_CHARS = "/\\._-"
# A run of two or more ASCII letters/digits is one token; a CJK run is split further below.
_TOKEN = re.compile(r"[a-z0-9]{2,}|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CONTENT_WEIGHT = 1.0
_HEADING_WEIGHT = 2.0
_PATH_WEIGHT = 1.5
_TAG_WEIGHT = 1.25
_WIKILINK_WEIGHT = 1.25
_MAX_OCCURRENCES = 4


class FakeLexicalEmbedder:
    """Deterministic hashed bag of words: no model, no network, stable across runs."""

    provider = "fake"
    model = FAKE_MODEL
    dim = FAKE_DIM
    native_dim = FAKE_DIM
    # Stateless and cheap to rebuild: ingest may run it in its worker processes.
    runs_in_workers = True

    def embed_documents(self, chunks: Sequence[ChunkText]) -> list[list[float]]:
        """One vector per chunk, from its content, heading path, path, tags and wikilinks."""
        return [_fake_vector([
            (chunk.content, _CONTENT_WEIGHT),
            (" ".join(chunk.heading_path), _HEADING_WEIGHT),
            (chunk.relative_path, _PATH_WEIGHT),
            (" ".join(chunk.tags), _TAG_WEIGHT),
            (" ".join(chunk.wikilinks), _WIKILINK_WEIGHT),
        ]) for chunk in chunks]

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query: its text as content only."""
        return _fake_vector([(text, _CONTENT_WEIGHT)])


def fake_tokens(text: str) -> list[str]:
    """fake-lexical-v1 tokens of one field, in text order."""
    # Collapsing whitespace, the last step of the normal form, cannot change the tokens; skipped.
    normalised = unicodedata.normalize("NFKC", text).lower()
    # Five plain replaces run in C; str.translate with a mapping looks up every character.
    for separator in _SEPARATOR_CHARS:
        normalised = normalised.replace(separator, " ")
    tokens = []
    for token in _TOKEN.findall(normalised):
        if token[0] < "\u3400":
            tokens.append(token)
            continue
        tokens.extend(token)
        tokens.extend(token[index:index + 2] for index in range(len(token) - 1))
    return tokens


@lru_cache(maxsize=1 << 18)
def fake_bucket(token: str) -> int:
    """The bucket of a token: the first 8 bytes of sha256("fake-lexical-v1:" + token) mod 1024."""
    digest = hashlib.sha256(f"{FAKE_MODEL}:{token}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % FAKE_DIM


def _field_buckets(text: str) -> dict[int, int]:
    """bucket -> sum over the field's distinct tokens of min(occurrences, 4), before weighting."""
    buckets: dict[int, int] = {}
    for token, count in Counter(fake_tokens(text)).items():
        bucket = fake_bucket(token)
        buckets[bucket] = buckets.get(bucket, 0) + (count if count < _MAX_OCCURRENCES
                                                    else _MAX_OCCURRENCES)
    return buckets


# Heading paths, paths, tags and link lists repeat across the chunks of a note.
_metadata_buckets = lru_cache(maxsize=4096)(_field_buckets)


def _fake_vector(fields: list[tuple[str, float]]) -> list[float]:
    buckets: dict[int, float] = {}
    for position, (text, weight) in enumerate(fields):
        counts = _field_buckets(text) if position == 0 else _metadata_buckets(text)
        for bucket, count in counts.items():
            buckets[bucket] = buckets.get(bucket, 0.0) + count * weight
    vector = [0.0] * FAKE_DIM
    # Every value is a small multiple of 1/4, so the sums and the norm are exact in any order.
    norm = math.sqrt(sum(value * value for value in buckets.values()))
    for bucket, value in buckets.items():
        vector[bucket] = value / norm
    return vector
