"""The API's operationIds are part of its contract: generated clients name their methods after
them. django-ninja derives one from the view's module, so a view moved to another app must keep
its old id explicitly (ops/api.py does)."""

from __future__ import annotations

from localrag_site.api import api

OPERATIONS = [
    ("GET", "/health", "knowledge_api_health"),
    ("GET", "/health/live", "knowledge_api_health_live"),
    ("GET", "/health/ready", "knowledge_api_health_ready"),
    ("GET", "/providers/health", "ops_api_providers_health"),
    ("GET", "/knowledge-bases", "knowledge_api_knowledge_bases_view"),
    ("POST", "/knowledge-bases", "knowledge_api_knowledge_base_create_view"),
    ("PATCH", "/knowledge-bases/{slug}", "knowledge_api_knowledge_base_change_view"),
    ("DELETE", "/knowledge-bases/{slug}", "knowledge_api_knowledge_base_delete_view"),
    ("GET", "/knowledge-bases/{slug}/documents", "knowledge_api_documents_view"),
    ("POST", "/knowledge-bases/{slug}/documents", "knowledge_api_upload_view"),
    ("GET", "/documents/{document_id}", "knowledge_api_document_view"),
    ("DELETE", "/documents/{document_id}", "knowledge_api_document_delete_view"),
    ("GET", "/documents/{document_id}/content", "knowledge_api_document_content_view"),
    ("POST", "/documents/{document_id}/reindex", "knowledge_api_document_reindex_view"),
    ("GET", "/jobs/{job_id}", "knowledge_api_job_view"),
    ("POST", "/search", "retrieval_api_search_view"),
    ("POST", "/ask", "answering_api_ask_view"),
    ("POST", "/ask/stream", "answering_api_ask_stream_view"),
    ("POST", "/conversations", "conversations_api_conversation_create_view"),
    ("GET", "/conversations", "conversations_api_conversations_list_view"),
    ("GET", "/conversations/{conversation_id}", "conversations_api_conversation_get_view"),
    ("PATCH", "/conversations/{conversation_id}", "conversations_api_conversation_rename_view"),
    ("DELETE", "/conversations/{conversation_id}", "conversations_api_conversation_delete_view"),
    ("POST", "/conversations/{conversation_id}/messages",
     "conversations_api_conversation_ask_view"),
    ("POST", "/conversations/{conversation_id}/messages/stream",
     "conversations_api_conversation_ask_stream_view"),
    ("POST", "/messages/{message_id}/feedback", "conversations_api_message_feedback_view"),
    ("GET", "/me", "access_api_me_view"),
    ("GET", "/audit", "access_api_audit_view"),
    ("GET", "/review/tasks", "review_api_tasks_view"),
    ("GET", "/review/tasks/{task_id}", "review_api_task_view"),
    ("POST", "/review/tasks/{task_id}/accept", "review_api_accept_view"),
    ("POST", "/review/tasks/{task_id}/exclude", "review_api_exclude_view"),
    ("POST", "/review/tasks/{task_id}/fix", "review_api_fix_view"),
    ("POST", "/evaluation/sets", "evaluation_api_set_create_view"),
    ("GET", "/evaluation/sets", "evaluation_api_sets_view"),
    ("GET", "/evaluation/sets/{set_id}", "evaluation_api_set_view"),
    ("PUT", "/evaluation/sets/{set_id}", "evaluation_api_set_revise_view"),
    ("POST", "/evaluation/runs", "evaluation_api_run_create_view"),
    ("GET", "/evaluation/runs", "evaluation_api_runs_view"),
    ("GET", "/evaluation/runs/{run_id}", "evaluation_api_run_view"),
    ("GET", "/evaluation/runs/{run_id}/results", "evaluation_api_run_results_view"),
    ("GET", "/evaluation/runs/{run_id}/export", "evaluation_api_run_export_view"),
]


def test_every_operation_keeps_its_published_id():
    schema = api.get_openapi_schema()
    found = [(method.upper(), path, operation["operationId"])
             for path, methods in schema["paths"].items()
             for method, operation in methods.items()]
    assert found == OPERATIONS
