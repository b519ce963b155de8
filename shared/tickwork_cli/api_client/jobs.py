"""The typed client's jobs: create (with an Idempotency-Key), list, read, change, pause, resume, cancel (one, or many
by a selector), trigger, preview, backfill; and a schedule's preview before it is a job's."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from tickwork.control.api_bodies import (
    BackfillRequest,
    BackfillResponse,
    JobList,
    JobSpec,
    JobUpdate,
    JobVariantsView,
    Preview,
    SchedulePreviewRequest,
    TriggeredRun,
    TriggerRequest,
)
from tickwork.control.batch_create import BatchCreateRequest, BatchCreateResult
from tickwork.control.bulk_jobs import BulkJobsRequest, BulkJobsResult
from tickwork.model.job import Job

from tickwork_cli.api_client.exchange import Listing, Part, segment

OPERATIONS = {
    ("POST", "/v1/jobs"): "create_job",
    ("POST", "/v1/bulk/jobs/create"): "create_jobs_in_batch",
    ("GET", "/v1/jobs"): "list_jobs",
    ("GET", "/v1/jobs/{job_id}"): "get_job",
    ("PATCH", "/v1/jobs/{job_id}"): "update_job",
    ("POST", "/v1/jobs/{job_id}/pause"): "pause_job",
    ("POST", "/v1/jobs/{job_id}/resume"): "resume_job",
    ("DELETE", "/v1/jobs/{job_id}"): "cancel_job",
    ("POST", "/v1/bulk/jobs"): "bulk_jobs",
    ("POST", "/v1/jobs/{job_id}/trigger"): "trigger_job",
    ("GET", "/v1/jobs/{job_id}/preview"): "preview_job",
    ("GET", "/v1/jobs/{job_id}/variants"): "job_variants",
    ("POST", "/v1/jobs/{job_id}/variants/{name}/promote"): "promote_variant",
    ("POST", "/v1/jobs/{job_id}/variants/{name}/rollback"): "rollback_variant",
    ("POST", "/v1/jobs/{job_id}/backfill"): "backfill_job",
    ("POST", "/v1/schedules/preview"): "preview_schedule",
}


class Jobs(Part):
    def create_job(self, spec: JobSpec | Mapping[str, Any], *, idempotency_key: str | None = None) -> Job:
        """Create a job. The Idempotency-Key (a new one unless given) makes a retried create, or a repeat with the
        same key and body within 24 h, answer the job the first one created."""
        key = idempotency_key or uuid.uuid4().hex
        return self._exchange.one(Job, "POST", "/v1/jobs", body=spec, headers={"Idempotency-Key": key})

    def create_jobs_in_batch(
        self, request: BatchCreateRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> BatchCreateResult:
        """Create up to 25 jobs in one request (`{"jobs": [...]}`), each answered on its own (created, replayed, or
        why not). The Idempotency-Key (a new one unless given) makes a retry create only what the first did not."""
        key = idempotency_key or uuid.uuid4().hex
        return self._exchange.one(
            BatchCreateResult, "POST", "/v1/bulk/jobs/create", body=request, headers={"Idempotency-Key": key}
        )

    def get_job(self, job_id: str, *, tenant: str | None = None) -> Job:
        return self._exchange.one(Job, "GET", f"/v1/jobs/{segment(job_id)}", query={"tenant": tenant})

    def list_jobs(
        self,
        *,
        state: str | None = None,
        type: str | None = None,  # the API's name for it
        name_prefix: str | None = None,
        tag: str | None = None,
        tenant: str | None = None,
        page_size: int | None = None,
    ) -> Listing[JobList, Job]:
        """Every job that matches, newest first, a page at a time. `tag` is `key=value`."""
        query = {"tenant": tenant, "state": state, "type": type, "name_prefix": name_prefix, "tag": tag}
        return Listing(self._exchange, JobList, "/v1/jobs", query, page_size)

    def update_job(self, job_id: str, patch: JobUpdate | Mapping[str, Any]) -> Job:
        return self._exchange.one(Job, "PATCH", f"/v1/jobs/{segment(job_id)}", body=patch)

    def pause_job(self, job_id: str) -> Job:
        return self._exchange.one(Job, "POST", f"/v1/jobs/{segment(job_id)}/pause")

    def resume_job(self, job_id: str) -> Job:
        return self._exchange.one(Job, "POST", f"/v1/jobs/{segment(job_id)}/resume")

    def cancel_job(self, job_id: str) -> Job:
        return self._exchange.one(Job, "DELETE", f"/v1/jobs/{segment(job_id)}")

    def bulk_jobs(self, request: BulkJobsRequest | Mapping[str, Any]) -> BulkJobsResult:
        """Pause, resume or cancel the jobs a selector names, a page of them (send again with `next_cursor`)."""
        return self._exchange.one(BulkJobsResult, "POST", "/v1/bulk/jobs", body=request)

    def trigger_job(self, job_id: str, request: TriggerRequest | Mapping[str, Any] | None = None) -> TriggeredRun:
        """Run the job now, once (with `payload`, that payload; with `debounce`, in its window's run)."""
        return self._exchange.one(TriggeredRun, "POST", f"/v1/jobs/{segment(job_id)}/trigger", body=request)

    def preview_job(self, job_id: str, *, count: int | None = None) -> Preview:
        return self._exchange.one(Preview, "GET", f"/v1/jobs/{segment(job_id)}/preview", query={"count": count})

    def backfill_job(self, job_id: str, request: BackfillRequest | Mapping[str, Any]) -> BackfillResponse:
        """Runs for the job's past occurrences in [from, to], each once."""
        return self._exchange.one(BackfillResponse, "POST", f"/v1/jobs/{segment(job_id)}/backfill", body=request)

    def preview_schedule(self, request: SchedulePreviewRequest | Mapping[str, Any]) -> Preview:
        return self._exchange.one(Preview, "POST", "/v1/schedules/preview", body=request)

    def job_variants(self, job_id: str, *, window: str | None = None) -> JobVariantsView:
        """The job's baseline and variants over `window` (30m, 24h, 7d; the API's default: 24h) (docs/versions.md)."""
        query = {"window": window}
        return self._exchange.one(JobVariantsView, "GET", f"/v1/jobs/{segment(job_id)}/variants", query=query)

    def promote_variant(self, job_id: str, name: str) -> Job:
        return self._exchange.one(Job, "POST", f"/v1/jobs/{segment(job_id)}/variants/{segment(name)}/promote")

    def rollback_variant(self, job_id: str, name: str) -> Job:
        return self._exchange.one(Job, "POST", f"/v1/jobs/{segment(job_id)}/variants/{segment(name)}/rollback")
