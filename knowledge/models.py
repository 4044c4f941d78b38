"""Models of the knowledge app.

Unmanaged models over the tables of knowledge/schema.sql (the schema's source of truth): Django
never creates or alters those tables; they exist for the admin and for simple ORM reads. Writes
of the index go through knowledge.store with psycopg (set-based statements in knowledge.sql).
Knowledge bases and their sources are edited in the admin; everything else there is read-only.

Grants and API tokens belong to Django's users, so they are ordinary managed models with
migrations.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models


class KnowledgeBase(models.Model):
    slug = models.SlugField(max_length=63, unique=True)
    name = models.TextField()
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        managed = False
        db_table = "knowledge_bases"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class KnowledgeBaseSource(models.Model):
    KINDS = [("vault", "vault folder"), ("uploads", "upload area")]

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.PROTECT,
                                       related_name="sources")
    kind = models.TextField(choices=KINDS, default="vault")
    path = models.TextField(unique=True, help_text="canonical folder path")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        managed = False
        db_table = "knowledge_base_sources"
        ordering = ["knowledge_base__slug", "path"]

    def __str__(self) -> str:
        return f"{self.knowledge_base.slug}: {self.path}"


class Document(models.Model):
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.DO_NOTHING, null=True,
                                       related_name="documents")
    vault_path = models.TextField()
    file_path = models.TextField()
    relative_path = models.TextField()
    content_hash = models.TextField()
    mtime_ns = models.BigIntegerField(null=True)
    size_bytes = models.BigIntegerField(null=True)
    frontmatter = models.JSONField(default=dict)
    format = models.TextField(default="markdown")
    title = models.TextField(null=True)
    page_count = models.IntegerField(null=True)
    ocr_page_count = models.IntegerField(default=0)
    metadata = models.JSONField(default=dict)
    status = models.TextField(default="active")
    original_name = models.TextField(null=True)
    active_version = models.ForeignKey("DocumentVersion", on_delete=models.DO_NOTHING, null=True,
                                       related_name="+")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "documents"
        ordering = ["vault_path", "relative_path"]

    def __str__(self) -> str:
        return self.relative_path


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.DO_NOTHING, null=True,
                                       related_name="+")
    chunk_index = models.IntegerField()
    content = models.TextField()
    file_path = models.TextField()
    relative_path = models.TextField()
    heading_path = ArrayField(models.TextField(), default=list)
    frontmatter = models.JSONField(default=dict)
    tags = ArrayField(models.TextField(), default=list)
    wikilinks = ArrayField(models.TextField(), default=list)
    metadata = models.JSONField(default=dict)
    content_hash = models.TextField()
    token_count = models.IntegerField(null=True)
    page_start = models.IntegerField(null=True)
    page_end = models.IntegerField(null=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "chunks"
        ordering = ["relative_path", "chunk_index"]

    def __str__(self) -> str:
        return f"{self.relative_path} #{self.chunk_index}"


class Embedding(models.Model):
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="embeddings")
    embedding_provider = models.TextField()
    embedding_model = models.TextField()
    embedding_dim = models.IntegerField()
    # The vector column is deliberately not mapped: nothing in Django needs to load 1024 floats.
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "embeddings"

    def __str__(self) -> str:
        return f"{self.embedding_provider}/{self.embedding_model} for chunk {self.chunk_id}"


class IngestRun(models.Model):
    vault_path = models.TextField()
    embedding_provider = models.TextField()
    embedding_model = models.TextField()
    embedding_dim = models.IntegerField()
    status = models.TextField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    documents_added = models.IntegerField(default=0)
    documents_updated = models.IntegerField(default=0)
    documents_deleted = models.IntegerField(default=0)
    documents_skipped = models.IntegerField(default=0)
    chunks_written = models.IntegerField(default=0)
    embeddings_written = models.IntegerField(default=0)
    error_summary = models.TextField(null=True)
    metadata = models.JSONField(default=dict)

    class Meta:
        managed = False
        db_table = "ingest_runs"
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"


class DocumentVersion(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions")
    content_hash = models.TextField()
    config_hash = models.TextField()
    config = models.JSONField(default=dict)
    status = models.TextField()
    chunk_count = models.IntegerField(default=0)
    vector_count = models.IntegerField(default=0)
    error = models.TextField(null=True)
    created_at = models.DateTimeField()
    activated_at = models.DateTimeField(null=True)

    class Meta:
        managed = False
        db_table = "document_versions"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"version {self.pk} of document {self.document_id} ({self.status})"


class Grant(models.Model):
    """A user's role on a knowledge base: readers search and ask; maintainers also upload,
    delete and reindex. Superusers need no grant."""

    READER = "reader"
    MAINTAINER = "maintainer"
    ROLES = [(READER, "reader"), (MAINTAINER, "maintainer")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="knowledge_grants")
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE,
                                       related_name="grants", db_constraint=False)
    role = models.CharField(max_length=16, choices=ROLES, default=READER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "knowledge_base"],
                                               name="one_grant_per_user_and_base")]
        ordering = ["knowledge_base_id", "user_id"]

    def __str__(self) -> str:
        return f"{self.user} {self.role} on {self.knowledge_base}"


class ApiToken(models.Model):
    """An API token issued to a user: only the SHA-256 of the secret is stored. It acts with
    its user's grants, narrowed to `knowledge_bases` (when any are listed) and to reading when
    `read_only`."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, help_text="the token's first characters, to "
                                                       "recognise it; not secret")
    token_hash = models.CharField(max_length=64, unique=True)
    read_only = models.BooleanField(default=False)
    # True when the token was issued for listed knowledge bases: it then reads at most those,
    # and nothing once they are all gone (an empty list must not mean "every base").
    narrowed = models.BooleanField(default=False)
    knowledge_bases = models.ManyToManyField(KnowledgeBase, blank=True, related_name="+",
                                             db_constraint=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"token {self.pk} ({self.prefix}…) of {self.user}"
