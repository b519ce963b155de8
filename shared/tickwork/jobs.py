"""Job lifecycle: create, pause, resume, cancel, trigger, retry. What the API calls.

Every change is a conditional write against the job's version, so two callers never lose each other's
change; a create is acknowledged only once its write is durable (promise 1), and never waits for a run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tickwork.clock import Clock, to_ms
from tickwork.dispatch import Dispatcher
from tickwork.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge
from tickwork.jobtypes import UnknownJobType, registry
from tickwork.models import (
    DEFAULT_MISFIRE_GRACE_SECONDS,
    MAX_TIMEOUT_SECONDS,
    Job,
    JobState,
    OverlapPolicy,
    RetryPolicy,
    Run,
    RunStatus,
    RunTrigger,
    is_job_id,
    new_job_id,
    parse_run_id,
    run_id_for,
)
from tickwork.observability import logger
from tickwork.results import ResultStore
from tickwork.schedule import Schedule
from tickwork.store import JobStore

# The job item (<= 400 KB in DynamoDB) carries the payload; SQS messages never do. 256 KiB leaves room.
MAX_PAYLOAD_BYTES = 256 * 1024
_VERSION_RETRIES = 5


class JobSpec(BaseModel):
    """What a caller submits to create a job."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=64)
    payload: dict[str, Any] = Field(default_factory=dict)
    schedule: Schedule
    priority: int = Field(default=5, ge=0, le=9)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    timeout_seconds: int = Field(default=300, ge=1, le=MAX_TIMEOUT_SECONDS)
    misfire_grace_seconds: int = Field(default=DEFAULT_MISFIRE_GRACE_SECONDS, ge=0, le=7 * 86400)
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    tags: dict[str, str] = Field(default_factory=dict, max_length=50)


class JobService:
    def __init__(
        self,
        store: JobStore,
        dispatcher: Dispatcher,
        results: ResultStore,
        clock: Clock,
        *,
        http_allowlist: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.results = results
        self.clock = clock
        self.http_allowlist = http_allowlist

    # ------------------------------------------------------------ create

    def check_payload(self, job_type: str, payload: dict[str, Any]) -> None:
        """The type exists, its own model accepts the payload, and the payload fits."""
        try:
            kind = registry.get(job_type)
        except UnknownJobType as exc:
            raise InvalidInput.one("type", str(exc)) from None
        size = len(json.dumps(payload, separators=(",", ":")).encode())
        if size > MAX_PAYLOAD_BYTES:
            raise PayloadTooLarge(size, MAX_PAYLOAD_BYTES)
        try:
            kind.parse(payload, context={"http_allowlist": self.http_allowlist})
        except ValidationError as exc:
            raise InvalidInput.from_validation(exc, prefix="payload") from None

    def first_occurrence(self, job: Job, now: datetime) -> datetime:
        if job.schedule.at is not None and job.schedule.at <= now:
            raise InvalidInput.one("schedule.at", "must be in the future")
        first = job.next_occurrence_after(now)
        if first is None:
            field = "schedule.end_at" if job.schedule.end_at is not None else "schedule"
            raise InvalidInput.one(field, "the schedule has no occurrence in the future")
        return first

    def create_job(self, tenant: str, spec: JobSpec) -> Job:
        self.check_payload(spec.type, spec.payload)
        now = self.clock.now()
        job = Job(
            id=new_job_id(to_ms(now)),
            tenant=tenant,
            created_at=now,
            updated_at=now,
            **spec.model_dump(exclude={"schedule", "retry"}),
            schedule=spec.schedule,
            retry=spec.retry,
        )
        job = job.model_copy(update={"next_run_at": self.first_occurrence(job, now)})
        self.store.put_new_job(job)  # durable before acknowledged
        logger.info("job created", extra={"job_id": job.id, "type": job.type, "next_run_at": job.next_run_at})
        self._dispatch_soon(job)
        return job

    def _dispatch_soon(self, job: Job) -> None:
        """A job due within the horizon is claimed now, so it runs on time rather than at the next tick."""
        try:
            self.dispatcher.dispatch_job(job)
        except Exception:
            # The job is stored; the next tick claims it. Acknowledging must not depend on this.
            logger.exception("immediate dispatch failed; the tick will claim it", extra={"job_id": job.id})

    # ------------------------------------------------------------ reads

    def get_job(self, tenant: str, job_id: str) -> Job:
        job = self.store.get_job(job_id) if is_job_id(job_id) else None
        if job is None or job.tenant != tenant:
            raise NotFound(f"job {job_id} not found")  # other tenants' jobs do not exist, as far as you know
        return job

    def get_run(self, tenant: str, run_id: str) -> Run:
        run = self.store.get_run(run_id) if parse_run_id(run_id) else None
        if run is None or run.tenant != tenant:
            raise NotFound(f"run {run_id} not found")
        return run

    # ------------------------------------------------------------ state changes

    def _change(self, tenant: str, job_id: str, change: Callable[[Job, datetime], Job | None]) -> Job:
        """Apply `change` under optimistic locking; it returns None when there is nothing to do."""
        for _ in range(_VERSION_RETRIES):
            job = self.get_job(tenant, job_id)
            now = self.clock.now()
            changed = change(job, now)
            if changed is None:
                return job
            changed = changed.model_copy(update={"version": job.version + 1, "updated_at": now})
            if self.store.replace_job(changed, expected_version=job.version):
                return changed
        raise Conflict(f"job {job_id} is changing concurrently; try again")

    def pause(self, tenant: str, job_id: str) -> Job:
        def change(job: Job, now: datetime) -> Job | None:
            if job.state is JobState.PAUSED:
                return None
            if job.state is not JobState.ACTIVE:
                raise Conflict(f"cannot pause a {job.state.value} job")
            return job.model_copy(update={"state": JobState.PAUSED, "paused_at": now})

        return self._change(tenant, job_id, change)

    def resume(self, tenant: str, job_id: str) -> Job:
        """Back to ACTIVE; the next claim applies the misfire rule to what was missed while paused."""

        def change(job: Job, now: datetime) -> Job | None:
            if job.state is JobState.ACTIVE:
                return None
            if job.state is not JobState.PAUSED:
                raise Conflict(f"cannot resume a {job.state.value} job")
            return job.model_copy(update={"state": JobState.ACTIVE, "resumed_at": now})

        job = self._change(tenant, job_id, change)
        self._dispatch_soon(job)
        return job

    def cancel(self, tenant: str, job_id: str) -> Job:
        def change(job: Job, now: datetime) -> Job | None:
            if job.state is JobState.CANCELLED:
                return None
            if job.state is JobState.COMPLETED:
                raise Conflict("cannot cancel a COMPLETED job")
            return job.model_copy(update={"state": JobState.CANCELLED, "next_run_at": None})

        return self._change(tenant, job_id, change)

    def trigger(self, tenant: str, job_id: str) -> Run:
        """Run now, once, outside the schedule. Runs even while paused (it was asked for explicitly)."""
        job = self.get_job(tenant, job_id)
        if job.state is JobState.CANCELLED:
            raise Conflict("cannot trigger a CANCELLED job")
        now = self.clock.now()
        for offset_ms in range(5):  # two triggers in the same millisecond get neighbouring ids
            at = now + timedelta(milliseconds=offset_ms)
            run = Run(
                id=run_id_for(job.id, at, RunTrigger.MANUAL),
                job_id=job.id,
                tenant=tenant,
                scheduled_for=at,
                status=RunStatus.QUEUED,
                priority=job.priority,
                trigger=RunTrigger.MANUAL,
                enqueued_at=now,
            )
            if self.store.put_queued_run(run, redispatch_at=at + self.dispatcher.redispatch_after):
                self.dispatcher.send_runs([run])
                return run
        raise Conflict("too many triggers at once; try again")

    def retry_run(self, tenant: str, run_id: str) -> Run:
        """Re-queue a FAILED run; its attempts start again."""
        run = self.get_run(tenant, run_id)
        if run.status is not RunStatus.FAILED:
            raise Conflict(f"only FAILED runs can be retried; this one is {run.status.value}")
        now = self.clock.now()
        if not self.store.requeue_failed_run(run, now=now, redispatch_at=now + self.dispatcher.redispatch_after):
            raise Conflict("the run changed meanwhile; try again")
        queued = run.model_copy(update={"status": RunStatus.QUEUED, "attempts": 0, "error": None, "enqueued_at": now})
        self.dispatcher.send_runs([queued.model_copy(update={"scheduled_for": now})])
        return queued
