"""/health and the status page say when searches rank in SQL because a base's search index is
missing or stale, and name only bases the caller reads."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.index.helpers import base_folder, built, lexical_bases
from tests.retrieval.test_lexical_pruning import chunks_add

pytestmark = pytest.mark.usefixtures("clean_tables")


def search_index_of(client) -> dict:
    return json.loads(client.get("/health").content)["details"]["search_index"]


def test_health_says_which_bases_search_in_sql_and_why(client, config_override):
    _, _, (first, second) = lexical_bases(51, chunks=(50, 20))
    section = search_index_of(client)
    assert section["state"] == "degraded"
    assert set(section["sql_fallback"]) == {"b51-0", "b51-1"}
    assert "rag index rebuild" in section["reason"]
    built(first)
    built(second)
    assert search_index_of(client) == {"setting": "on", "state": "ok", "sql_fallback": [],
                                       "behind": [],
                                       "reason": "every base's search index is usable"}
    chunks_add(base_id=first, document_path="z.md", rows=[("fresh", [], "z.md")])
    section = search_index_of(client)
    assert section["state"] == "ok" and section["behind"] == ["b51-0"]
    shutil.rmtree(base_folder(second))
    assert search_index_of(client)["sql_fallback"] == ["b51-1"]
    config_override(rag_search_index="off")
    assert search_index_of(client)["state"] == "off"
