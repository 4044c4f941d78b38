"""The review queue's table, for the admin and simple reads; written through review.sql."""

from __future__ import annotations

from django.db import models

from knowledge.models import Document, DocumentVersion, KnowledgeBase


class ReviewTask(models.Model):
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.DO_NOTHING,
                                       related_name="+")
    document = models.ForeignKey(Document, on_delete=models.DO_NOTHING, related_name="+")
    document_version = models.ForeignKey(DocumentVersion, on_delete=models.DO_NOTHING,
                                         related_name="+")
    kind = models.TextField()
    page = models.IntegerField()
    table_index = models.IntegerField(null=True)
    bbox = models.JSONField(null=True)
    rows = models.JSONField(null=True)
    extracted_text = models.TextField()
    corrected_text = models.TextField(null=True)
    flags = models.JSONField(default=list)
    confidence = models.FloatField(null=True)
    status = models.TextField(default="open")
    job_id = models.BigIntegerField(null=True)
    resolved_by = models.TextField(null=True)
    resolved_at = models.DateTimeField(null=True)
    note = models.TextField(null=True)
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "review_tasks"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"review task {self.pk} ({self.kind}, page {self.page}, {self.status})"
