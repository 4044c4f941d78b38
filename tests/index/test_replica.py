"""A machine that searches a read replica keeps its own index of each base, built from that
replica: never the primary's folder, and never data the replica does not hold yet."""

from __future__ import annotations

import pytest
from django.db import connection

from core.replicas import replica_aliases, replica_reads
from index.maintenance import base_catch_up
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval.lexical import LexicalReport, lexical_search
from tests.core.test_replicas import SAMPLE_VAULT, caught_up, on_replica, replica  # noqa: F401

QUERY = "客户 P1 工单 升级"


def searched(config) -> tuple[list[int], dict | None, str | None]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM knowledge_bases WHERE slug = 'default'")
        (base,) = cursor.fetchone()
    report = LexicalReport()
    with replica_reads(config) as alias:
        hits = lexical_search(query=QUERY, limit=5, knowledge_base_ids=[base], report=report)
    return [hit.chunk_id for hit in hits], report.index, alias


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_replica_search_uses_an_index_built_from_the_replica(replica, on_replica):  # noqa: F811
    config = on_replica
    # Builds the primary's index.
    result = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=config)
    caught_up(config, chunks=result.chunks_written)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM knowledge_bases WHERE slug = 'default'")
        (base,) = cursor.fetchone()
    on_primary = lexical_search(query=QUERY, limit=5, knowledge_base_ids=[base],
                                report=(primary_report := LexicalReport()))
    assert primary_report.index["path"] == "index"

    found, index, alias = searched(config)
    assert alias == "replica-1"
    assert index == {"path": "sql", "reason": "missing", "knowledge_base_id": base}
    assert found == [hit.chunk_id for hit in on_primary]

    [replica_alias] = replica_aliases(config)
    outcome = base_catch_up(knowledge_base_id=base, config=config, alias=replica_alias)
    assert outcome.lexical == "rebuilt"
    found, index, _ = searched(config)
    assert index["path"] == "index" and index["delta"] == 0
    assert found == [hit.chunk_id for hit in on_primary]
