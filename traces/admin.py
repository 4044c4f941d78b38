"""Read-only admin of the traces."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdminMixin
from traces.models import Trace


@admin.register(Trace)
class TraceAdmin(ReadOnlyAdminMixin[Trace], admin.ModelAdmin[Trace]):
    list_display = ("created_at", "operation", "channel", "caller", "status", "mode",
                    "total_ms", "llm_model", "prompt_tokens", "completion_tokens",
                    "token_source")
    list_filter = ("operation", "channel", "status", "mode", "token_source")
    search_fields = ("id", "caller", "error_code")

    @admin.display(description="total ms")
    def total_ms(self, obj: Trace) -> float | None:
        return obj.timings_ms.get("total")
