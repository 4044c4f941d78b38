"""Read-only admin over what was indexed: documents, chunks, embeddings and ingest runs."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from core.admin import ReadOnlyAdminMixin
from knowledge.models import Chunk, Document, Embedding, IngestRun


def _link(model_name: str, pk: int, label: str) -> str:
    url = reverse(f"admin:knowledge_{model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, label)


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("relative_path", "format", "title", "page_count", "ocr", "vault_path",
                    "size_bytes", "chunk_count", "updated_at")
    list_filter = ("format", "vault_path")
    search_fields = ("relative_path", "file_path", "title")
    readonly_fields = ("chunks_link", "ocr")

    def get_queryset(self, request):

        return super().get_queryset(request).annotate(_chunk_count=Count("chunks"))

    @admin.display(description="chunks", ordering="_chunk_count")
    def chunk_count(self, obj: Document) -> int:
        return obj._chunk_count

    @admin.display(description="OCR")
    def ocr(self, obj: Document) -> str:
        """Pages read by OCR and their mean confidence; scanned pages left out, and why."""
        parts = []
        if obj.ocr_page_count:
            confidence = obj.metadata.get("ocr_confidence")
            parts.append(f"{obj.ocr_page_count} pages" + (
                f" (confidence {confidence:.2f})" if confidence is not None else ""))
        skipped = obj.metadata.get("ocr_skipped_pages")
        if skipped:
            parts.append(f"{len(skipped)} left out: {obj.metadata.get('ocr_skipped_reason')}")
        return "; ".join(parts) or "—"

    @admin.display(description="chunks")
    def chunks_link(self, obj: Document) -> str:
        url = reverse("admin:knowledge_chunk_changelist") + f"?document__id__exact={obj.pk}"
        return format_html('<a href="{}">view the chunks of this document</a>', url)


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("relative_path", "chunk_index", "heading", "pages", "ocr", "token_count",
                    "document_link")
    list_select_related = ("document",)
    list_filter = ("document__vault_path",)
    search_fields = ("relative_path", "heading_path", "content")
    exclude = ("document",)
    readonly_fields = ("document_link",)

    @admin.display(description="heading")
    def heading(self, obj: Chunk) -> str:
        return " › ".join(obj.heading_path)

    @admin.display(description="pages", ordering="page_start")
    def pages(self, obj: Chunk) -> str:
        if obj.page_start is None:
            return "—"
        return str(obj.page_start) if obj.page_end in (None, obj.page_start) else (
            f"{obj.page_start}–{obj.page_end}")

    @admin.display(description="OCR", boolean=True)
    def ocr(self, obj: Chunk) -> bool:
        return bool(obj.metadata.get("ocr"))

    @admin.display(description="document")
    def document_link(self, obj: Chunk) -> str:
        return _link("document", obj.document_id, obj.document.relative_path)


@admin.register(Embedding)
class EmbeddingAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("id", "embedding_provider", "embedding_model", "embedding_dim", "chunk_link",
                    "created_at")
    list_select_related = ("chunk",)
    list_filter = ("embedding_provider", "embedding_model")
    search_fields = ("chunk__relative_path",)
    exclude = ("chunk",)
    readonly_fields = ("chunk_link",)

    @admin.display(description="chunk")
    def chunk_link(self, obj: Embedding) -> str:
        return _link("chunk", obj.chunk_id, str(obj.chunk))


@admin.register(IngestRun)
class IngestRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("id", "status", "vault_path", "embedding_provider", "started_at", "finished_at",
                    "documents_added", "documents_updated", "documents_deleted",
                    "documents_skipped", "chunks_written", "embeddings_written")
    list_filter = ("status", "embedding_provider", "vault_path")
    search_fields = ("vault_path", "error_summary")


from knowledge import admin_access  # noqa: E402,F401  (registers its admins)
