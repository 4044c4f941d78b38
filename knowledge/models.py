"""Unmanaged models over the tables of knowledge/schema.sql (the schema's source of truth).

Django never creates or alters these tables; they exist for the read-only admin and for simple
ORM reads. Writes go through knowledge.store with psycopg (set-based statements in knowledge.sql).
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models


class Document(models.Model):
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
