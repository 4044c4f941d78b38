"""Models of the knowledge app.

Unmanaged models over the tables that the app's migrations create in SQL (the .sql files beside
them): Django's model state never creates or alters those tables; the models exist for the admin
and for simple ORM reads. Writes
of the index go through knowledge.store with psycopg (set-based statements in knowledge.sql).
Knowledge bases and their sources are edited in the admin; everything else there is read-only.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models


class KnowledgeBase(models.Model):
    slug = models.SlugField(max_length=63, unique=True)
    name = models.TextField()
    description = models.TextField(blank=True, default="")
    # embeddings/outbound.py: whether its text may be sent to servers outside this machine.
    outbound = models.TextField(
        choices=[("local-only", "local-only: never sent outside this machine"),
                 ("allowed", "allowed: may go to remote LLM, rerank and embedding servers")],
        default="local-only")
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
    # An upload's source: the name it is cited by (knowledge/upload_names.py); None for a vault's.
    source_name = models.TextField(null=True)
    active_version = models.ForeignKey("DocumentVersion", on_delete=models.DO_NOTHING, null=True,
                                       related_name="+")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "documents"
        ordering = ["vault_path", "relative_path"]

    def __str__(self) -> str:
        return self.source_name or self.relative_path


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
