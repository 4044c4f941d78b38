"""Two knowledge bases that share a vocabulary but not a marker, the users and tokens that read
them, and the checks that a response holds nothing of a base its caller may not read.

`alpha` (small) and `beta` (BETA_SCALE times larger) both hold release-checklist notes, so one
question matches both when nothing scopes it; every note of a base carries the base's marker word
and identifier, in its text and in its path. A response is checked twice: structurally (slugs,
document ids, chunk ids, counts) and as raw text (no marker, slug or path of the other base).
The request helpers at the end give /ask and /ask/stream answers one shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import connection

from access.api_tokens import token_create
from access.models import Grant
from core.config import get_config
from knowledge.bases import kb_create
from knowledge.ingest import IngestRequest, vault_ingest
from tests.api.http import sse_events, unquoted

# Everything that names a base: its slug, name, marker word, identifier and folder. The slugs
# are substrings of the identifiers, so a raw-text check on the slug catches them too.
MARKS = {
    "alpha": ("alpha", "Zephyrine Handbook", "zephyrine", "ALPHA-7731"),
    "beta": ("beta", "Quokkalith Archive", "quokkalith", "BETA-4409"),
}
TEAMS = {"alpha": "zephyrine team", "beta": "quokkalith crew"}
TICKETS = {"alpha": "ALPHA-7731", "beta": "BETA-4409"}
BETA_SCALE = 10
# Per base: notes on the shared topic, and notes on something else (so that no shared word is
# in more than half of a base's chunks, where the lexical channel would drop it).
TOPIC_NOTES, OTHER_NOTES = 3, 5

# Matches the topic notes of both bases: the unscoped caller sees both markers.
QUERY = "release checklist sign-off zephyrine quokkalith before the deploy window opens"
QUESTION = ("How do the zephyrine team and the quokkalith crew sign off the release checklist "
            "before the deploy window opens?")
# No marker, but nearer beta's topic notes (its "crew") than alpha's: what the HNSW check asks.
TOPIC_QUERY = "How does the crew sign off the release checklist before the deploy window opens?"
# Only the other-topic notes of beta match it well: alpha's reader gets no_answer.
BETA_ONLY_QUESTION = "When does the quokkalith kitchen bake bread and soup?"


def notes_write(root: Path, slug: str, scale: int = 1) -> Path:
    """A vault folder for one base: TOPIC_NOTES·scale topic notes and OTHER_NOTES·scale others."""
    marker = MARKS[slug][2]
    folder = root / f"{marker}-vault"
    (folder / marker).mkdir(parents=True)
    for number in range(TOPIC_NOTES * scale):
        (folder / marker / f"release-{number}.md").write_text(
            f"# Release checklist {number}\n\n"
            f"The release checklist is signed off by the {TEAMS[slug]} with ticket "
            f"{TICKETS[slug]} before the deploy window opens. Step {number}.\n",
            encoding="utf-8")
    for number in range(OTHER_NOTES * scale):
        hobby = ("greenhouse waters tomatoes and basil every morning" if slug == "alpha"
                 else "kitchen bakes bread and soup every evening")
        (folder / marker / f"log-{number}.md").write_text(
            f"# Log {number}\n\nThe {marker} {hobby}, entry {number}.\n", encoding="utf-8")
    return folder


@dataclass
class World:
    """What the bases hold (ids from the database) and a secret per token name."""

    base_ids: dict[str, int] = field(default_factory=dict)
    document_ids: dict[str, set[int]] = field(default_factory=dict)
    chunk_ids: dict[str, set[int]] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    token_ids: dict[str, int] = field(default_factory=dict)

    def bearer(self, token: str) -> str:
        return f"Bearer {self.tokens[token]}"


# Who each token may read. ana, bo and cy research what they read (their searches explain
# themselves); `cy_alpha` is cy's token narrowed to alpha; `bo_alpha` is bo's token narrowed to
# a base bo has no grant on.
READS = {
    "ana": {"alpha"},
    "ana_read_only": {"alpha"},
    "bo": {"beta"},
    "mo": {"beta"},
    "cy_alpha": {"alpha"},
    "cy": {"alpha", "beta"},
    "root": {"alpha", "beta"},
    "bo_alpha": set(),
    "nobody": set(),
}
ONE_BASE = sorted(name for name, bases in READS.items() if len(bases) == 1)
BOTH_BASES = sorted(name for name, bases in READS.items() if len(bases) == 2)
# The researcher role's people, apart from READS (whose searches all ask for explain): rita
# only reads alpha; rae researches alpha and only reads beta.
ROLE_READS = {"rita": {"alpha"}, "rae": {"alpha", "beta"}}
STUDIES = {"rita": set(), "rae": {"alpha"}}


def world_build(root: Path, *, beta_scale: int = BETA_SCALE) -> World:
    """Both bases ingested with the fake embedder, the users, their grants and their tokens."""
    world = World()
    config = get_config()
    for slug, scale in (("alpha", 1), ("beta", beta_scale)):
        folder = notes_write(root, slug, scale)
        world.base_ids[slug] = kb_create(slug=slug, name=MARKS[slug][1],
                                         sources=[str(folder)]).id
        vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=config)
    with connection.cursor() as cursor:
        cursor.execute("SELECT b.slug, c.id, c.document_id FROM chunks c "
                       "JOIN knowledge_bases b ON b.id = c.knowledge_base_id")
        for slug, chunk_id, document_id in cursor.fetchall():
            world.chunk_ids.setdefault(slug, set()).add(chunk_id)
            world.document_ids.setdefault(slug, set()).add(document_id)
    assert len(world.document_ids["alpha"]) == TOPIC_NOTES + OTHER_NOTES
    assert len(world.document_ids["beta"]) == (TOPIC_NOTES + OTHER_NOTES) * beta_scale

    users = get_user_model().objects
    roles = {"ana": [("alpha", Grant.RESEARCHER)], "bo": [("beta", Grant.RESEARCHER)],
             "mo": [("beta", Grant.MAINTAINER)],
             "cy": [("alpha", Grant.RESEARCHER), ("beta", Grant.RESEARCHER)], "nobody": [],
             "rita": [("alpha", Grant.READER)],
             "rae": [("alpha", Grant.RESEARCHER), ("beta", Grant.READER)]}
    for username, grants in roles.items():
        user = users.create_user(username=username, password="pw")
        for slug, role in grants:
            Grant.objects.create(user=user, knowledge_base_id=world.base_ids[slug], role=role)
    users.create_superuser(username="root", password="pw")
    issued = {
        "ana": token_create(username="ana"),
        "ana_read_only": token_create(username="ana", read_only=True),
        "bo": token_create(username="bo"),
        "mo": token_create(username="mo"),
        "cy_alpha": token_create(username="cy", slugs=["alpha"]),
        "cy": token_create(username="cy"),
        "root": token_create(username="root"),
        "bo_alpha": token_create(username="bo", slugs=["alpha"]),
        "nobody": token_create(username="nobody"),
        "rita": token_create(username="rita"),
        "rae": token_create(username="rae"),
    }
    world.tokens = {name: token.secret for name, token in issued.items()}
    world.token_ids = {name: token.id for name, token in issued.items()}
    return world


def forbidden_text(readable: set[str]) -> list[str]:
    """The lower-cased strings a response to a reader of `readable` must not contain."""
    return [mark.lower() for slug, marks in MARKS.items() if slug not in readable
            for mark in marks]


def raw_check(text: str, readable: set[str]) -> None:
    """No slug, name, marker, identifier or path of a base outside `readable` in `text`."""
    lowered = text.lower()
    found = [mark for mark in forbidden_text(readable) if mark in lowered]
    assert not found, f"{found} leaked into: {text[:2000]}"


def hits_check(world: World, hits: list[dict], readable: set[str]) -> None:
    """Every search result or citation comes from `readable` (slug and document id)."""
    allowed = set().union(*(world.document_ids[slug] for slug in readable)) if readable else set()
    assert {hit["knowledge_base"] for hit in hits} <= readable
    assert {hit["document_id"] for hit in hits} <= allowed


def explain_check(world: World, explain: dict, readable: set[str]) -> None:
    allowed = set().union(*(world.chunk_ids[slug] for slug in readable)) if readable else set()
    assert {entry["chunk_id"] for entry in explain["results"]} <= allowed
    raw_check(json.dumps(explain, ensure_ascii=False), readable)


def slugs_seen(text: str) -> set[str]:
    """Which bases' markers a response holds (for the checks that the scoping is not vacuous)."""
    lowered = text.lower()
    return {slug for slug, marks in MARKS.items() if marks[2] in lowered}


# --- requests and responses ---------------------------------------------------------------


def body_of(path: str, text: str, **extra) -> dict:
    key = "query" if path == "/search" else "question"
    return {key: text, **extra}


def send(client, path: str, body: dict, authorization: str | None = None):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return client.post(path, data=json.dumps(body), content_type="application/json", **headers)


def text_of(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode("utf-8")
    return response.content.decode("utf-8")


def ask_parts(path: str, response) -> tuple[str, dict, str]:
    """(raw text, the /ask-shaped body, the answer) of an /ask or /ask/stream response."""
    assert response.status_code == 200
    if path == "/ask":
        text = text_of(response)
        body = json.loads(text)
        return text, body, body["answer"]
    events = sse_events(response)
    text = json.dumps(events, ensure_ascii=False)
    by_name = dict(events)
    assert [name for name, _ in events][-3:] == ["citations", "usage", "done"]
    final = by_name["citations"]["citations"]
    assert unquoted(by_name["retrieval"]["citations"], quoted=final) == unquoted(final)
    answer = "".join(data["text"] for name, data in events if name == "delta")
    return text, {**by_name["retrieval"], "answer": answer}, answer


def drained(response):
    """The response, read to its end (a stream then gives its LLM slot back)."""
    text_of(response)
    return response


def readable_of(token: str) -> set[str]:
    """The bases a token name reads; "env" is RAG_API_TOKEN, which reads every base."""
    if token == "env":
        return {"alpha", "beta"}
    return READS[token] if token in READS else ROLE_READS[token]
