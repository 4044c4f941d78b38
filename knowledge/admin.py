"""Admin of the knowledge app: knowledge bases with their sources and grants, edited here, and a
read-only look at what was indexed: documents, chunks, embeddings and ingest runs.

What would break the index is refused with a message rather than left to the database: deleting
a base that still has documents or sources, or the `default` base (where folders ingested
without a base of their own go), and deleting or re-pointing a source whose folder still has
documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from access.models import Grant
from audit.admin_logging import AuditedAdminMixin
from core.admin import ReadOnlyAdminMixin
from core.errors import LocalRagError
from knowledge.bases import DEFAULT_SLUG, kb_source_documents_move, slug_check
from knowledge.models import (
    Chunk,
    Document,
    Embedding,
    IngestRun,
    KnowledgeBase,
    KnowledgeBaseSource,
)
from knowledge.vault_index import vault_overlap_check
from parsing.vault import vault_resolve

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _DocumentCounts(TypedDict):
    """What DocumentAdmin.get_queryset annotates each document with."""

    _chunk_count: int


class _BaseCounts(TypedDict):
    """What KnowledgeBaseAdmin.get_queryset annotates each base with."""

    _documents: int
    _chunks: int
    _sources: int


class _SourceCounts(TypedDict):
    """What KnowledgeBaseSourceAdmin.get_queryset annotates each source with."""

    _documents: int


def _link(model_name: str, pk: int, label: str) -> str:
    url = reverse(f"admin:knowledge_{model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, label)


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdminMixin[Document], admin.ModelAdmin[Document]):
    list_display = ("relative_path", "source_name", "format", "title", "page_count", "ocr",
                    "vault_path", "size_bytes", "chunk_count", "updated_at")
    list_filter = ("format", "vault_path")
    search_fields = ("relative_path", "source_name", "file_path", "title")
    readonly_fields = ("chunks_link", "ocr")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        return super().get_queryset(request).annotate(_chunk_count=Count("chunks"))

    @admin.display(description="chunks", ordering="_chunk_count")
    def chunk_count(self, obj: WithAnnotations[Document, _DocumentCounts]) -> int:
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
class ChunkAdmin(ReadOnlyAdminMixin[Chunk], admin.ModelAdmin[Chunk]):
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
        return _link("document", obj.document_id, str(obj.document))


@admin.register(Embedding)
class EmbeddingAdmin(ReadOnlyAdminMixin[Embedding], admin.ModelAdmin[Embedding]):
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
class IngestRunAdmin(ReadOnlyAdminMixin[IngestRun], admin.ModelAdmin[IngestRun]):
    list_display = ("id", "status", "vault_path", "embedding_provider", "started_at", "finished_at",
                    "documents_added", "documents_updated", "documents_deleted",
                    "documents_skipped", "chunks_written", "embeddings_written")
    list_filter = ("status", "embedding_provider", "vault_path")
    search_fields = ("vault_path", "error_summary")


def _count(queryset: QuerySet, by: str) -> Coalesce:
    """A correlated count, so that counting documents and chunks side by side does not
    multiply the rows of one by the other."""
    rows = queryset.order_by().values(by).annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(rows, output_field=IntegerField()), Value(0))


def _documents_from(path: str) -> int:
    return Document.objects.filter(vault_path=path).count()


def _still_indexed(path: str, count: int) -> str:
    return (f"{path} still has {count} indexed documents: remove them first with "
            f"`rag vault forget {path}`")


class KnowledgeBaseForm(forms.ModelForm):
    class Meta:
        model = KnowledgeBase
        fields = ("slug", "name", "description", "outbound")

    def clean_slug(self) -> str:
        # The same rule as `rag kb create` (and the table's CHECK), as a form error, not a 500.
        try:
            return slug_check(self.cleaned_data["slug"])
        except LocalRagError as exc:
            raise ValidationError(exc.message) from None


class SourceForm(forms.ModelForm):
    """A source's path is the canonical folder, the very value its documents' vault_path holds,
    so it is resolved here the way `rag kb add-source` resolves it."""

    class Meta:
        model = KnowledgeBaseSource
        fields = ("knowledge_base", "kind", "path")

    def clean_path(self) -> str:
        path = self.cleaned_data["path"]
        if self.instance.pk and path == self.instance.path:
            return path  # unchanged: kept as indexed, even if the folder is gone from disk now
        try:
            path = str(vault_resolve(path))
            # As `rag kb add-source`: a folder inside or around another source would put the
            # same files in two bases.
            vault_overlap_check(vault_path=path)
        except LocalRagError as exc:
            raise ValidationError(exc.message) from None
        owner = (KnowledgeBaseSource.objects.select_related("knowledge_base")
                 .filter(path=path).exclude(pk=self.instance.pk).first())
        if owner is not None:
            raise ValidationError(
                f"{path} is a source of the knowledge base {owner.knowledge_base.slug!r} "
                "already; to move it, change the knowledge base of that source")
        if self.instance.pk and path != self.instance.path:
            count = _documents_from(self.instance.path)
            if count:
                raise ValidationError(_still_indexed(self.instance.path, count)
                                      + "; or add the new folder as a source of its own")
        return path


class SourceInlineFormSet(forms.BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        # A form marked for deletion is left out of validation, so the refusal lives here.
        for form in self.forms:
            # _should_delete_form: Django's own (private) test, absent from django-stubs.
            if (form.instance.pk and self.can_delete
                    and self._should_delete_form(form)):  # type: ignore[attr-defined]
                count = _documents_from(form.instance.path)
                if count:
                    raise ValidationError(_still_indexed(form.instance.path, count))


class SourceInline(admin.TabularInline):
    model = KnowledgeBaseSource
    form = SourceForm
    formset = SourceInlineFormSet
    fields = ("kind", "path", "created_at")
    readonly_fields = ("created_at",)
    extra = 0


class GrantInline(admin.TabularInline):
    model = Grant
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)
    extra = 0


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(AuditedAdminMixin[KnowledgeBase], admin.ModelAdmin[KnowledgeBase]):
    audit_object_type = "knowledge_base"
    audit_fields = ("slug", "name", "description", "outbound")
    form = KnowledgeBaseForm
    list_display = ("slug", "name", "outbound", "documents", "chunks", "sources_count",
                    "updated_at")
    list_filter = ("outbound",)
    search_fields = ("slug", "name", "description")
    inlines = (SourceInline, GrantInline)

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeBase]:
        return super().get_queryset(request).annotate(
            _documents=_count(Document.objects.filter(knowledge_base=OuterRef("pk"),
                                                      status="active"), "knowledge_base"),
            _chunks=_count(Chunk.objects.filter(knowledge_base=OuterRef("pk")),
                           "knowledge_base"),
            _sources=_count(KnowledgeBaseSource.objects.filter(knowledge_base=OuterRef("pk")),
                            "knowledge_base"))

    @admin.display(description="documents", ordering="_documents")
    def documents(self, obj: WithAnnotations[KnowledgeBase, _BaseCounts]) -> int:
        return obj._documents

    @admin.display(description="chunks", ordering="_chunks")
    def chunks(self, obj: WithAnnotations[KnowledgeBase, _BaseCounts]) -> int:
        return obj._chunks

    @admin.display(description="sources", ordering="_sources")
    def sources_count(self, obj: WithAnnotations[KnowledgeBase, _BaseCounts]) -> int:
        return obj._sources

    def get_readonly_fields(self, request: HttpRequest,
                            obj: KnowledgeBase | None = None) -> tuple[str, ...]:
        # Ingest falls back to `default` by its slug: renaming it would lose that base.
        return ("slug",) if obj is not None and obj.slug == DEFAULT_SLUG else ()

    def save_formset(self, request: HttpRequest, form: forms.ModelForm[KnowledgeBase],
                     formset: BaseInlineFormSet[Any, KnowledgeBase, Any], change: bool) -> None:
        super().save_formset(request, form, formset, change)
        if formset.model is KnowledgeBaseSource:
            # A folder's documents belong to the base of its source: they go along.
            for source in formset.new_objects + [obj for obj, _ in formset.changed_objects]:
                kb_source_documents_move(knowledge_base_id=source.knowledge_base_id,
                                         path=source.path)

    def get_deleted_objects(self, objs: Sequence[KnowledgeBase] | QuerySet[KnowledgeBase],
                            request: HttpRequest
                            ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # Sources are PROTECTed by their foreign key, so Django lists them already; documents
        # (DO_NOTHING, owned by the unmanaged index) and the default base are added here.
        to_delete, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for base in objs:
            if base.slug == DEFAULT_SLUG:
                protected.append(f"the knowledge base {DEFAULT_SLUG!r} itself: it cannot be "
                                 "deleted, folders ingested without a base of their own go there")
            documents = Document.objects.filter(knowledge_base=base).count()
            if documents:
                protected.append(f"{documents} documents of {base.slug!r}: remove them first "
                                 "with `rag vault forget PATH` for each of its sources")
        return to_delete, counts, perms_needed, protected


@admin.register(KnowledgeBaseSource)
class KnowledgeBaseSourceAdmin(AuditedAdminMixin[KnowledgeBaseSource],
                               admin.ModelAdmin[KnowledgeBaseSource]):
    audit_object_type = "knowledge_base_source"
    audit_fields = ("knowledge_base_id", "kind", "path")
    form = SourceForm
    list_display = ("path", "kind", "knowledge_base", "documents", "created_at")
    list_filter = ("kind", "knowledge_base")
    list_select_related = ("knowledge_base",)
    search_fields = ("path", "knowledge_base__slug")

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeBaseSource]:
        return super().get_queryset(request).annotate(_documents=_count(
            Document.objects.filter(vault_path=OuterRef("path")), "vault_path"))

    @admin.display(description="documents", ordering="_documents")
    def documents(self, obj: WithAnnotations[KnowledgeBaseSource, _SourceCounts]) -> int:
        return obj._documents

    def save_model(self, request: HttpRequest, obj: KnowledgeBaseSource,
                   form: forms.ModelForm[KnowledgeBaseSource],
                   change: bool) -> None:
        # The admin's change view runs in one transaction: the move is all or nothing.
        super().save_model(request, obj, form, change)
        kb_source_documents_move(knowledge_base_id=obj.knowledge_base_id, path=obj.path)

    def get_deleted_objects(
            self, objs: Sequence[KnowledgeBaseSource] | QuerySet[KnowledgeBaseSource],
            request: HttpRequest) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        to_delete, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for source in objs:
            count = _documents_from(source.path)
            if count:
                protected.append(_still_indexed(source.path, count))
        return to_delete, counts, perms_needed, protected
