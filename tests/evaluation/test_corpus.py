"""The corpus as an evaluation sees it: a digest of what is indexed, and where a text appears
verbatim (case and whitespace aside)."""

from __future__ import annotations

from django.db import connection

from access.callers import Scope
from evaluation.corpus import VERBATIM_PLACES_PER_TEXT, corpus_digest, verbatim_places
from knowledge.bases import kb_create, kb_get

ESCALATION = "policies/Support Escalation Policy.md"


def plant(text: str, *, chunks: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET content = content || %s WHERE id IN (SELECT id FROM "
                       "chunks ORDER BY id LIMIT %s)", [text, chunks])


def test_a_text_is_found_whatever_its_case_and_whitespace(sample_index):
    plant("\nThe  Quarterly\tAudit Checklist lives here.", chunks=1)
    scope = Scope.of([kb_get("default").id])
    places = verbatim_places(scope=scope, texts=["nothing like this anywhere at all",
                                                 "the quarterly audit CHECKLIST"])
    assert [place.text_index for place in places] == [1]


def test_at_most_three_places_per_text_and_short_texts_are_not_looked_for(sample_index):
    plant(" zebra crossing protocol v9", chunks=5)
    scope = Scope.of([kb_get("default").id])
    places = verbatim_places(scope=scope, texts=["zebra crossing protocol v9", "zebra"])
    assert len(places) == VERBATIM_PLACES_PER_TEXT
    assert {place.text_index for place in places} == {0}
    assert places == sorted(places, key=lambda p: (p.text_index, p.document, p.chunk_index))


def test_only_the_scope_s_bases_are_searched(sample_index):
    plant(" zebra crossing protocol v9", chunks=1)
    other = Scope.of([kb_create(slug="other").id])
    assert verbatim_places(scope=other, texts=["zebra crossing protocol v9"]) == []


def test_the_digest_changes_with_a_chunk_and_not_without(sample_index):
    scope = Scope.of([kb_get("default").id])
    first = corpus_digest(scope=scope)
    assert first == corpus_digest(scope=scope) and first.documents > 0
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET content_hash = 'other' WHERE relative_path = %s "
                       "AND chunk_index = 0", [ESCALATION])
    assert corpus_digest(scope=scope).digest != first.digest
