"""The review tasks in the admin, read-only: decisions go through the API, CLI or workbench,
which check the maintainer role and queue the jobs."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdminMixin
from review.models import ReviewTask


@admin.register(ReviewTask)
class ReviewTaskAdmin(ReadOnlyAdminMixin[ReviewTask], admin.ModelAdmin[ReviewTask]):
    list_display = ("id", "knowledge_base", "document", "kind", "page", "table_index",
                    "confidence", "status", "resolved_by", "created_at")
    list_filter = ("status", "kind", "knowledge_base")
    list_select_related = ("knowledge_base", "document")
    search_fields = ("document__relative_path", "document__source_name", "extracted_text")
