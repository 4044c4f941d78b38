"""The admin of knowledge bases, sources, grants and tokens (knowledge/admin.py,
access/admin.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from access.api_tokens import token_create
from access.callers import caller_for_secret
from access.models import ApiToken, Grant
from core.config import get_config
from knowledge.bases import DEFAULT_SLUG, kb_create, kb_get
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.models import Chunk, Document, KnowledgeBase, KnowledgeBaseSource

ADMIN = "/admin/knowledge"
ACCESS_ADMIN = "/admin/access"


@pytest.fixture
def handbook(db, tmp_path: Path) -> KnowledgeBase:
    """A base with one ingested source folder of two notes."""
    vault = tmp_path / "handbook"
    vault.mkdir()
    for name in ("leave", "travel"):
        (vault / f"{name}.md").write_text(f"# {name}\n\nThe {name} policy.\n", encoding="utf-8")
    kb_create(slug="handbook", name="Staff handbook", sources=[str(vault)])
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    return KnowledgeBase.objects.get(slug="handbook")


def inline_management(prefix: str, total: int) -> dict[str, str]:
    return {f"{prefix}-TOTAL_FORMS": str(total), f"{prefix}-INITIAL_FORMS": "0",
            f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"}


@pytest.mark.parametrize("page", [
    f"{ADMIN}/knowledgebase/", f"{ADMIN}/knowledgebase/add/", f"{ADMIN}/knowledgebasesource/",
    f"{ADMIN}/knowledgebasesource/add/", f"{ACCESS_ADMIN}/grant/", f"{ACCESS_ADMIN}/grant/add/",
    f"{ACCESS_ADMIN}/apitoken/"])
def test_pages_render_for_a_superuser(admin_client, handbook, page):
    alice = get_user_model().objects.create_user(username="alice")
    Grant.objects.create(user=alice, knowledge_base=handbook, role=Grant.READER)
    token_create(username="alice", slugs=["handbook"])
    assert admin_client.get(page).status_code == 200


def test_change_pages_render_with_sources_and_grants_inline(admin_client, handbook):
    alice = get_user_model().objects.create_user(username="alice")
    grant = Grant.objects.create(user=alice, knowledge_base=handbook, role=Grant.MAINTAINER)
    source = handbook.sources.get()
    page = admin_client.get(f"{ADMIN}/knowledgebase/{handbook.pk}/change/").content.decode()
    assert source.path in page and 'name="grants-0-role"' in page
    assert admin_client.get(f"{ADMIN}/knowledgebasesource/{source.pk}/change/").status_code == 200
    assert admin_client.get(f"{ACCESS_ADMIN}/grant/{grant.pk}/change/").status_code == 200


def test_the_base_list_counts_documents_and_chunks(admin_client, handbook):
    chunks = Chunk.objects.filter(knowledge_base=handbook).count()
    listing = admin_client.get(f"{ADMIN}/knowledgebase/").content.decode()
    row = re.search(r"<tr>.*?handbook.*?</tr>", listing, re.S).group(0)
    assert '<td class="field-documents">2</td>' in row
    assert f'<td class="field-chunks">{chunks}</td>' in row and chunks >= 2


def test_a_base_is_created_with_a_canonical_source_and_a_grant(admin_client, tmp_path: Path):
    (tmp_path / "legal").mkdir()
    alice = get_user_model().objects.create_user(username="alice")
    response = admin_client.post(f"{ADMIN}/knowledgebase/add/", {
        "slug": "legal", "name": "Legal", "description": "", "outbound": "allowed",
        **inline_management("sources", 1), "sources-0-kind": "vault",
        "sources-0-path": f"{tmp_path}/legal/../legal",
        **inline_management("grants", 1), "grants-0-user": str(alice.pk),
        "grants-0-role": "maintainer"})
    assert response.status_code == 302
    legal = kb_get("legal")
    assert [source.path for source in legal.sources] == [str((tmp_path / "legal").resolve())]
    assert Grant.objects.get(user=alice).role == "maintainer"
    assert legal.outbound == "allowed"  # the policy is set where the base is made
    listing = admin_client.get(f"{ADMIN}/knowledgebase/?outbound__exact=allowed").content.decode()
    assert ">legal<" in listing and ">default<" not in listing


def test_a_bad_slug_is_a_form_error(admin_client):
    response = admin_client.post(f"{ADMIN}/knowledgebase/add/", {
        "slug": "Not-Lower", "name": "x", **inline_management("sources", 0),
        **inline_management("grants", 0)})
    assert response.status_code == 200
    assert "must be 1–63 lower-case letters" in response.content.decode()
    assert not KnowledgeBase.objects.filter(name="x").exists()


def test_the_default_base_keeps_its_slug(admin_client):
    default = KnowledgeBase.objects.get(slug=DEFAULT_SLUG)
    page = admin_client.get(f"{ADMIN}/knowledgebase/{default.pk}/change/").content.decode()
    assert 'name="slug"' not in page and 'name="name"' in page


def test_token_admin_never_shows_the_hash_and_cannot_add_change_or_delete(admin_client, db):
    get_user_model().objects.create_user(username="alice")
    issued = token_create(username="alice", name="laptop")
    token = ApiToken.objects.get(pk=issued.id)
    listing = admin_client.get(f"{ACCESS_ADMIN}/apitoken/").content.decode()
    detail = admin_client.get(f"{ACCESS_ADMIN}/apitoken/{token.pk}/change/").content.decode()
    for page in (listing, detail):
        assert issued.prefix in page and "laptop" in page
        assert token.token_hash not in page and issued.secret not in page
        assert "token_hash" not in page
    assert f"{ACCESS_ADMIN}/apitoken/add/" not in listing
    assert 'name="_save"' not in detail
    assert admin_client.get(f"{ACCESS_ADMIN}/apitoken/add/").status_code == 403
    assert admin_client.post(f"{ACCESS_ADMIN}/apitoken/{token.pk}/delete/",
                             {"post": "yes"}).status_code == 403
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_revoke_action_revokes_the_selected_tokens_only(admin_client, db):
    get_user_model().objects.create_user(username="alice")
    first, second, kept = (token_create(username="alice") for _ in range(3))
    response = admin_client.post(f"{ACCESS_ADMIN}/apitoken/", {
        "action": "revoke_tokens", "_selected_action": [first.id, second.id], "index": "0"},
        follow=True)
    assert "2 tokens revoked" in response.content.decode()
    config = get_config()
    assert caller_for_secret(first.secret, config=config) is None
    assert caller_for_secret(second.secret, config=config) is None
    assert caller_for_secret(kept.secret, config=config) is not None
    revoked_at = ApiToken.objects.get(pk=first.id).revoked_at
    assert revoked_at is not None
    again = admin_client.post(f"{ACCESS_ADMIN}/apitoken/", {
        "action": "revoke_tokens", "_selected_action": [first.id], "index": "0"}, follow=True)
    assert "0 tokens revoked" in again.content.decode()
    assert ApiToken.objects.get(pk=first.id).revoked_at == revoked_at


def test_deleting_a_base_with_documents_or_sources_is_refused(admin_client, handbook):
    url = f"{ADMIN}/knowledgebase/{handbook.pk}/delete/"
    page = admin_client.get(url).content.decode()
    assert "would require deleting the following protected related objects" in page
    assert "2 documents of &#x27;handbook&#x27;" in page and "rag vault forget" in page
    assert admin_client.post(url, {"post": "yes"}).status_code == 200
    bulk = admin_client.post(f"{ADMIN}/knowledgebase/", {
        "action": "delete_selected", "_selected_action": [handbook.pk], "post": "yes"})
    assert bulk.status_code == 200
    assert KnowledgeBase.objects.filter(pk=handbook.pk).exists()
    assert Document.objects.filter(knowledge_base=handbook).count() == 2


def test_the_default_base_cannot_be_deleted(admin_client):
    default = KnowledgeBase.objects.get(slug=DEFAULT_SLUG)
    url = f"{ADMIN}/knowledgebase/{default.pk}/delete/"
    assert "it cannot be deleted" in admin_client.get(url).content.decode()
    admin_client.post(url, {"post": "yes"})
    assert KnowledgeBase.objects.filter(slug=DEFAULT_SLUG).exists()


def test_an_empty_base_is_deleted_with_its_grants(admin_client):
    empty = kb_create(slug="empty")
    alice = get_user_model().objects.create_user(username="alice")
    Grant.objects.create(user=alice, knowledge_base_id=empty.id)
    response = admin_client.post(f"{ADMIN}/knowledgebase/{empty.id}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not KnowledgeBase.objects.filter(slug="empty").exists()
    assert not Grant.objects.filter(user=alice).exists()


def test_a_source_with_documents_cannot_be_deleted_nor_re_pointed(admin_client, handbook,
                                                                  tmp_path: Path):
    source = handbook.sources.get()
    url = f"{ADMIN}/knowledgebase/{handbook.pk}/change/"
    inline = {"slug": "handbook", "name": "Staff handbook", "description": "",
              "outbound": "local-only", **inline_management("sources", 1),
              "sources-INITIAL_FORMS": "1",
              "sources-0-id": str(source.pk), "sources-0-knowledge_base": str(handbook.pk),
              "sources-0-kind": "vault", "sources-0-path": source.path,
              **inline_management("grants", 0)}
    deleted = admin_client.post(url, {**inline, "sources-0-DELETE": "on"})
    assert deleted.status_code == 200
    assert "still has 2 indexed documents" in deleted.content.decode()
    (tmp_path / "elsewhere").mkdir()
    moved = admin_client.post(url, {**inline, "sources-0-path": str(tmp_path / "elsewhere")})
    assert moved.status_code == 200 and "add the new folder as a source" in moved.content.decode()
    page = admin_client.get(f"{ADMIN}/knowledgebasesource/{source.pk}/delete/").content.decode()
    assert "still has 2 indexed documents" in page
    admin_client.post(f"{ADMIN}/knowledgebasesource/{source.pk}/delete/", {"post": "yes"})
    assert KnowledgeBaseSource.objects.get(pk=source.pk).path == source.path


def test_moving_a_source_to_another_base_takes_its_documents_and_chunks(admin_client,
                                                                        handbook):
    legal = kb_create(slug="legal")
    source = handbook.sources.get()
    response = admin_client.post(f"{ADMIN}/knowledgebasesource/{source.pk}/change/", {
        "knowledge_base": str(legal.id), "kind": "vault", "path": source.path})
    assert response.status_code == 302
    assert set(Document.objects.filter(vault_path=source.path)
               .values_list("knowledge_base_id", flat=True)) == {legal.id}
    assert set(Chunk.objects.filter(document__vault_path=source.path)
               .values_list("knowledge_base_id", flat=True)) == {legal.id}
    assert (kb_get("legal").documents, kb_get("handbook").documents) == (2, 0)


def test_a_folder_of_another_base_cannot_be_added_again(admin_client, handbook):
    source = handbook.sources.get()
    response = admin_client.post(f"{ADMIN}/knowledgebasesource/add/", {
        "knowledge_base": str(KnowledgeBase.objects.get(slug=DEFAULT_SLUG).pk), "kind": "vault",
        "path": source.path})
    assert response.status_code == 200
    assert "source of the knowledge base &#x27;handbook&#x27; already" in (
        response.content.decode())
    assert KnowledgeBaseSource.objects.filter(path=source.path).count() == 1


def test_a_folder_inside_another_source_is_a_form_error(admin_client, handbook):
    # As `rag kb add-source` refuses it: its files would be in two bases.
    source = handbook.sources.get()
    nested = Path(source.path) / "travel-notes"
    nested.mkdir()
    default = KnowledgeBase.objects.get(slug=DEFAULT_SLUG)
    response = admin_client.post(f"{ADMIN}/knowledgebasesource/add/", {
        "knowledge_base": str(default.pk), "kind": "vault", "path": str(nested)})
    assert response.status_code == 200
    assert f"{nested} is inside the indexed vault {source.path}" in response.content.decode()
    assert not KnowledgeBaseSource.objects.filter(path=str(nested)).exists()
