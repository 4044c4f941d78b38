"""Callers, scopes and API tokens (access/callers.py, access/api_tokens.py) on the real database."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from access.api_tokens import token_create, token_revoke, tokens_list
from access.callers import OPERATOR, access_control_on, caller_for_secret, kb_ids_all
from access.models import ApiToken, Grant
from core.config import get_config
from core.errors import NotFound
from knowledge.bases import DEFAULT_SLUG, kb_create, kb_get

pytestmark = pytest.mark.django_db


@pytest.fixture
def bases() -> dict[str, int]:
    """Three bases besides `default`: alice maintains hr, reads eng, and has no grant on ops."""
    ids = {slug: kb_create(slug=slug).id for slug in ("hr", "eng", "ops")}
    alice = get_user_model().objects.create_user(username="alice", password="pw")
    Grant.objects.create(user=alice, knowledge_base_id=ids["hr"], role=Grant.MAINTAINER)
    Grant.objects.create(user=alice, knowledge_base_id=ids["eng"], role=Grant.READER)
    ids[DEFAULT_SLUG] = kb_get(DEFAULT_SLUG).id
    return ids


def caller(secret: str):
    return caller_for_secret(secret, config=get_config())


def test_a_token_acts_with_its_users_grants(bases):
    issued = token_create(username="alice", name="laptop")
    found = caller(issued.secret)
    assert found.readable == {bases["hr"], bases["eng"]}
    assert found.writable == {bases["hr"]}
    assert (found.everything, found.token_id) == (False, issued.id)
    assert found.user_id == get_user_model().objects.get(username="alice").pk
    assert issued.secret not in found.label and "alice" in found.label


def test_a_superuser_token_reads_and_maintains_every_base(bases):
    get_user_model().objects.create_superuser(username="root", password="pw")
    found = caller(token_create(username="root").secret)
    assert found.readable == found.writable == set(kb_ids_all()) == set(bases.values())


def test_a_token_narrowed_to_bases_keeps_only_those_of_its_grants(bases):
    found = caller(token_create(username="alice", slugs=["hr", "ops"]).secret)
    # ops is listed but alice has no grant there: listing a base grants nothing.
    assert found.readable == found.writable == {bases["hr"]}


def test_a_read_only_token_writes_nothing(bases):
    found = caller(token_create(username="alice", read_only=True).secret)
    assert found.readable == {bases["hr"], bases["eng"]}
    assert found.writable == frozenset()


def test_a_revoked_token_is_refused_at_once(bases):
    issued = token_create(username="alice")
    assert caller(issued.secret) is not None
    token_revoke(token_id=issued.id)
    assert caller(issued.secret) is None
    with pytest.raises(NotFound):
        token_revoke(token_id=issued.id)


def test_the_token_of_an_inactive_user_is_refused(bases):
    issued = token_create(username="alice")
    get_user_model().objects.filter(username="alice").update(is_active=False)
    assert caller(issued.secret) is None


@pytest.mark.parametrize("secret", ["", "garbage", "lr_", "lr_unknown-but-well-formed",
                                    "lr_" + "x" * 300, "Bearer lr_abc"])
def test_malformed_or_unknown_secrets_are_refused(bases, secret):
    token_create(username="alice")
    assert caller(secret) is None


def test_a_secret_that_differs_in_one_character_is_refused(bases):
    secret = token_create(username="alice").secret
    assert caller(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None


def test_rag_api_token_stands_for_everything(bases, config_override):
    config = config_override(rag_api_token="s3cret-operator-token")
    found = caller_for_secret("s3cret-operator-token", config=config)
    assert found.everything and found.label == "RAG_API_TOKEN"
    later = kb_create(slug="later").id  # created after the caller was resolved
    assert set(found.scope().knowledge_base_ids) == set(bases.values()) | {later}
    assert caller_for_secret("s3cret-operator-token!", config=config) is None


def test_scope_narrows_to_slugs_the_caller_reads(bases):
    found = caller(token_create(username="alice").secret)
    assert found.scope().knowledge_base_ids == tuple(sorted([bases["hr"], bases["eng"]]))
    assert found.scope(slugs=["eng"]).knowledge_base_ids == (bases["eng"],)
    assert OPERATOR.scope(slugs=["ops", "hr"]).knowledge_base_ids == tuple(
        sorted([bases["ops"], bases["hr"]]))


def test_an_unreadable_base_and_an_unknown_one_are_both_not_found_alike(bases):
    found = caller(token_create(username="alice").secret)
    errors = {}
    for slug in ("ops", "no-such-base"):
        with pytest.raises(NotFound) as raised:
            found.scope(slugs=["hr", slug])
        errors[slug] = raised.value
    assert errors["ops"].message == "knowledge base not found: ops"
    assert errors["no-such-base"].message == "knowledge base not found: no-such-base"
    assert errors["ops"].details == {"knowledge_base": "ops"}
    assert errors["no-such-base"].details == {"knowledge_base": "no-such-base"}


def test_access_control_is_on_once_a_token_is_active_or_rag_api_token_is_set(
        bases, config_override):
    config = config_override(rag_api_token="")
    assert access_control_on(config=config) is False
    issued = token_create(username="alice")
    assert access_control_on(config=config) is True
    token_revoke(token_id=issued.id)
    assert access_control_on(config=config) is False
    assert access_control_on(config=config_override(rag_api_token="operator")) is True


def test_last_used_is_recorded(bases):
    issued = token_create(username="alice")
    assert ApiToken.objects.get(pk=issued.id).last_used_at is None
    caller(issued.secret)
    used = ApiToken.objects.get(pk=issued.id).last_used_at
    assert used is not None
    assert tokens_list()[0]["last_used_at"] == used


def test_only_the_hash_is_stored_the_secret_nowhere(bases):
    issued = token_create(username="alice", slugs=["hr"], name="ci")
    stored = ApiToken.objects.get(pk=issued.id)
    assert stored.token_hash == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert (stored.prefix, issued.secret.startswith(stored.prefix)) == (issued.prefix, True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables "
                       "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")
        tables = [row[0] for row in cursor.fetchall()]
        assert "knowledge_apitoken" in tables
        holding = []
        for table in tables:
            # The table name comes from the catalogue, never from input.
            cursor.execute(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s',
                           [f"%{issued.secret[len(issued.prefix):]}%"])
            if cursor.fetchone()[0]:
                holding.append(table)
    assert holding == []


def test_token_for_unknown_user_or_base_is_not_found_and_issues_nothing(bases):
    with pytest.raises(NotFound, match="no user named 'bob'"):
        token_create(username="bob")
    with pytest.raises(NotFound, match="knowledge base not found: nope"):
        token_create(username="alice", slugs=["hr", "nope"])
    assert ApiToken.objects.count() == 0


def test_tokens_list_never_holds_the_secret_or_the_hash(bases):
    issued = token_create(username="alice", slugs=["hr", "eng"], read_only=True, name="ci")
    [listed] = tokens_list()
    assert set(listed) == {"id", "prefix", "name", "user", "read_only", "knowledge_bases",
                           "created_at", "last_used_at", "revoked_at"}
    assert (listed["id"], listed["user"], listed["knowledge_bases"], listed["read_only"]) == (
        issued.id, "alice", ["eng", "hr"], True)
    assert issued.secret not in repr(listed)
    assert ApiToken.objects.get(pk=issued.id).token_hash not in repr(listed)


def test_a_narrowed_token_reads_nothing_once_its_bases_are_gone(config_override):
    """Deleting the only base a token was narrowed to must not widen it to every base."""
    from django.contrib.auth import get_user_model

    from access.api_tokens import token_create
    from access.callers import caller_for_secret
    from knowledge.bases import kb_create
    from knowledge.models import KnowledgeBase

    get_user_model().objects.create_superuser("boss")
    base = kb_create(slug="temporary")
    secret = token_create(username="boss", slugs=["temporary"]).secret
    assert caller_for_secret(secret, config=config_override()).readable == {base.id}
    KnowledgeBase.objects.filter(slug="temporary").delete()
    caller = caller_for_secret(secret, config=config_override())
    assert caller.readable == frozenset() and caller.writable == frozenset()
    assert caller.scope().knowledge_base_ids == ()
