"""The background jobs in the admin: listed with their state, filterable, never editable."""

from __future__ import annotations

from django.contrib import admin

from jobs.models import BackgroundJob
from jobs.queue import job_claim, job_enqueue, job_fail, job_heartbeat


def test_background_jobs_are_registered_in_the_admin():
    # knowledge/admin.py imports jobs.admin, which registers the model.
    assert BackgroundJob in admin.site._registry


def test_changelist_shows_state_and_filters_without_add_or_delete(admin_client):
    job_enqueue(type="document_ingest", resource="document:42", max_attempts=3)
    failing = job_enqueue(type="reindex")
    job_heartbeat(job_claim(owner="w", lease_seconds=30), stage="embed", progress=0.25)
    job_fail(job_claim(owner="w", lease_seconds=30), error="ValueError: boom", retryable=False)
    page = admin_client.get("/admin/jobs/backgroundjob/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "document:42" in html and "embed" in html and "25%" in html and "1/3" in html
    assert "/admin/jobs/backgroundjob/add/" not in html
    failed = admin_client.get("/admin/jobs/backgroundjob/", {"status__exact": "failed"})
    assert "reindex" in failed.content.decode() and "document:42" not in failed.content.decode()
    detail = admin_client.get(f"/admin/jobs/backgroundjob/{failing}/change/")
    assert detail.status_code == 200 and "ValueError: boom" in detail.content.decode()
    assert admin_client.get("/admin/jobs/backgroundjob/add/").status_code == 403
    assert admin_client.post(f"/admin/jobs/backgroundjob/{failing}/delete/",
                             {"post": "yes"}).status_code == 403
    assert BackgroundJob.objects.filter(pk=failing).exists()
