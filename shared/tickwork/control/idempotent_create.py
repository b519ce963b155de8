"""Creating a job under an Idempotency-Key: the same key and body within 24 h return the first response.

The record (tickwork.store.idempotency) is written only after the request proved valid, so bad input writes
nothing; the job id is recorded before the job is written, so a request that dies in between is completed by
its retry, under the same id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tickwork.control.api_bodies import JobSpec
from tickwork.control.job_factory import JobFactory
from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.control.tenants import ActiveJobsQuota
from tickwork.model.audit import Attribution
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict, FieldError
from tickwork.model.job import Job
from tickwork.observability import logger
from tickwork.store import JobRecords
from tickwork.store.idempotency import IdempotencyRecord, IdempotencyRecords


class KeyReused(Conflict):
    """An Idempotency-Key reused within 24 h with a different body."""

    def __init__(self, key: str) -> None:
        message = f"Idempotency-Key {key!r} was used within the last 24 hours with a different request body"
        self.errors = [FieldError("Idempotency-Key", message)]
        super().__init__(message)


def request_hash(body: Any) -> str:
    """A stable digest of a JSON request body (key order and whitespace do not matter)."""
    canonical = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class IdempotentCreate:
    job_records: JobRecords
    factory: JobFactory
    jobs: JobLifecycle  # writes and dispatches the new job
    records: IdempotencyRecords
    clock: Clock
    quota: ActiveJobsQuota  # max_active_jobs, checked after a replay is ruled out and before the key is taken

    def create_job_once(
        self, tenant: str, spec: JobSpec, *, key: str, request_hash: str, by: Attribution | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Create under `key`. Returns (the first response's body, whether this is a replay).

        The same key with the same body within 24 h returns the first response (even once the job has
        changed, or its `at` has passed); a different body is a Conflict (KeyReused). A replay is never refused
        by the max_active_jobs quota: the quota is checked only once no earlier request is found, and before the
        key is taken, so a refusal (QuotaExceeded) leaves neither a job nor a record claiming the key. Only the
        request that writes the job writes its audit record (attributed to `by`); a replay writes none.
        """
        earlier = self.records.find(tenant, key, now=self.clock.now())
        if earlier is not None:
            return self._replay(tenant, spec, earlier, request_hash, by)
        now = self.clock.now()
        job = self.jobs.new_job(tenant, spec, by=by)
        counted = self.quota.reserve(tenant)
        try:
            self.quota.known.know(tenant)  # before its job is written, as every create does (tickwork.store.tenants)
            earlier = self.records.claim(tenant, key, request_hash=request_hash, job_id=job.id, now=now)
        except Exception:
            self._give_back(tenant, counted)
            raise
        if earlier is not None:  # a concurrent request with the same key won (or the key's body differs)
            self._give_back(tenant, counted)
            return self._replay(tenant, spec, earlier, request_hash, by)
        try:
            written = self._put_or_get(job, counted=counted, by=by)
            if written is not job:  # a racing request wrote it, with its own place
                self._give_back(tenant, counted)
            body = written.model_dump(mode="json")
            self.records.save_response(tenant, key, job_id=written.id, response=body)
        except Exception:
            self._release_unless_created(tenant, key, job.id, counted=counted)
            raise
        return body, False

    def _give_back(self, tenant: str, counted: bool) -> None:
        if counted:
            self.quota.give_back(tenant)

    def _release_unless_created(self, tenant: str, key: str, job_id: str, *, counted: bool) -> None:
        """After a failure between claiming the key and saving the response: if the job was not written, free
        the key (a failed request must not burn it, or the corrected retry gets a 409) and its quota place. If
        it was written, or we cannot tell, the record stays: it names the job, so a retry returns that job
        instead of a second (and the place stays taken: at worst the counter is one too high)."""
        try:
            created = self.job_records.get_job(job_id) is not None
        except Exception:
            logger.exception("could not tell whether the job was written; the idempotency record stays")
            return
        if created:
            return
        self._give_back(tenant, counted)
        try:
            self.records.release(tenant, key, job_id=job_id)
        except Exception:
            logger.exception("could not release the idempotency key", extra={"job_id": job_id})

    def _replay(
        self, tenant: str, spec: JobSpec, earlier: IdempotencyRecord, request_hash: str, by: Attribution | None
    ) -> tuple[dict[str, Any], bool]:
        if earlier.request_hash != request_hash:
            raise KeyReused(earlier.key)
        if earlier.response is not None:
            return earlier.response, True
        # The first request has not answered yet (in flight, or it died): finish it under its recorded id. Its
        # job is not written yet, so it needs a place under the quota like any create (one the first request
        # may have reserved before dying stays counted: the counter over-counts, never under-counts).
        job = self.job_records.get_job(earlier.job_id)
        if job is None:
            new = self.jobs.new_job(tenant, spec, by=by, job_id=earlier.job_id)
            with self.quota.admitted(tenant, lambda: self.job_records.get_job(new.id) is not None) as counted:
                job = self._put_or_get(new, counted=counted, by=by)
                if job is not new:
                    self._give_back(tenant, counted)
        body = job.model_dump(mode="json")
        self.records.save_response(tenant, earlier.key, job_id=job.id, response=body)
        return body, True

    def _put_or_get(self, job: Job, *, counted: bool, by: Attribution | None) -> Job:
        """Write a new job; if a racing request with the same idempotency key wrote it first, that one stands
        (then `job` is not what is returned, and its reserved place is unused)."""
        if self.jobs.add_new(job, counted=counted, by=by):
            return job
        existing = self.job_records.get_job(job.id)
        if existing is None:  # pragma: no cover - the condition failed because it exists
            raise Conflict(f"job {job.id} is being created concurrently; try again")
        return existing
