"""Job lifecycle: create, pause, resume, cancel, trigger, retry. What the API calls.

Every change is a conditional write against the job's version, so two callers never lose each other's
change; a create is acknowledged only once its write is durable (promise 1), and never waits for a run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator

from tickwork.catalog import DEFAULT_LIMIT, Catalog, IdempotencyMismatch, IdempotencyRecord, Page
from tickwork.clock import Clock, to_ms
from tickwork.dispatch import Dispatcher
from tickwork.errors import Conflict, FieldError, InvalidInput, ItemTooLarge, NotFound, PayloadTooLarge
from tickwork.jobtypes import UnknownJobType, registry
from tickwork.models import (
    DEFAULT_MISFIRE_GRACE_SECONDS,
    Job,
    JobName,
    JobState,
    JobTypeName,
    MisfireGraceSeconds,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    Run,
    RunStatus,
    RunTrigger,
    Tags,
    TimeoutSeconds,
    is_job_id,
    new_job_id,
    parse_run_id,
    run_id_for,
)
from tickwork.observability import logger
from tickwork.results import ResultStore
from tickwork.schedule import CallerInstant, Schedule
from tickwork.store import JobStore, item_bytes, job_to_item

# The job item (<= 400 KB in DynamoDB) carries the payload; SQS messages never do. 256 KiB leaves room.
MAX_PAYLOAD_BYTES = 256 * 1024
# The whole job item as stored (payload, tags, schedule, keys, index attributes) is checked against this
# before anything is written: DynamoDB's 400 KB item limit less room for what the tick adds to the item.
MAX_JOB_ITEM_BYTES = 350 * 1024
_VERSION_RETRIES = 5
MAX_REDRIVE = 250  # runs one "redrive all" call re-queues; the response says when there are more


def _format(name: str, description: str) -> dict[str, Any]:
    return {"type": "string", "format": name, "description": description}


class ScheduleSpec(Schedule):
    """A schedule as a caller gives it: the stored Schedule's rules, and stricter instants (CallerInstant: an
    explicit offset, years 2000 to 2099). Stored schedules are read leniently, as Schedule."""

    # Exactly one of at, cron and rate, as the server checks it (null counts as absent): said in the OpenAPI
    # document too, so that `schedule: {}` is schema-invalid as it is server-invalid.
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": [kind], "properties": {kind: {"type": "string"}}} for kind in ("at", "cron", "rate")]
        },
    )

    at: CallerInstant | None = None
    # Checked by the server beyond what a pattern can say (croniter, the rate grammar and its 366-day cap, the
    # IANA database): the document names them as formats.
    cron: Annotated[str, WithJsonSchema(_format("cron", "5 fields, or 6 with seconds first; `H` spreads."))] | None = (
        None
    )
    rate: (
        Annotated[
            str, WithJsonSchema(_format("rate", '"30 seconds", "5 minutes", "1 hour", "2 days"; at most 366 days.'))
        ]
        | None
    ) = None
    timezone: Annotated[str, WithJsonSchema(_format("time-zone", "An IANA time zone name, such as Europe/Paris."))] = (
        "UTC"
    )
    start_at: CallerInstant | None = None
    end_at: CallerInstant | None = None

    def stored(self) -> Schedule:
        return Schedule.model_validate(self.model_dump())


def _typed_payloads(schema: dict[str, Any]) -> None:
    """The OpenAPI document says which types exist and what each one's payload must be (its own model's schema),
    as the server checks them. Built when the document is, so types registered by then are listed."""
    names = registry.names()
    schema["properties"]["type"]["enum"] = names
    branches = []
    for name in names:
        model = registry.get(name).payload_model
        payload = model.model_json_schema()
        if "$defs" in payload:  # nested models would need their own components: say only "an object"
            payload = {"type": "object"}
        payload.pop("title", None)
        branch: dict[str, Any] = {"properties": {"type": {"const": name}, "payload": payload}}
        if payload.get("required"):
            branch["required"] = ["payload"]
        branches.append(branch)
    schema["oneOf"] = branches


class JobSpec(BaseModel):
    """What a caller submits to create a job."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_typed_payloads)

    name: JobName
    type: JobTypeName
    payload: dict[str, Any] = Field(default_factory=dict)
    schedule: ScheduleSpec
    priority: Priority = 5
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    timeout_seconds: TimeoutSeconds = 300
    misfire_grace_seconds: MisfireGraceSeconds = DEFAULT_MISFIRE_GRACE_SECONDS
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    tags: Tags = Field(default_factory=dict)


class KeyReused(Conflict):
    """An Idempotency-Key reused within 24 h with a different body."""

    def __init__(self, key: str) -> None:
        message = f"Idempotency-Key {key!r} was used within the last 24 hours with a different request body"
        self.errors = [FieldError("Idempotency-Key", message)]
        super().__init__(message)


_ABSENT: Any = None  # a JobUpdate field's default: "leave it as it is"


def _no_defaults(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)


class JobUpdate(BaseModel):
    """What PATCH may change; absent fields stay as they are (`null` is refused). A job's type never changes."""

    # Every field optional, none nullable: the None defaults only mark "absent" (never validated, and kept out
    # of the OpenAPI document), and an explicit null is refused by _not_null.
    model_config = ConfigDict(extra="forbid", json_schema_extra=_no_defaults)

    name: JobName = Field(default=_ABSENT)
    payload: dict[str, Any] = Field(default=_ABSENT)
    schedule: ScheduleSpec = Field(default=_ABSENT)
    priority: Priority = Field(default=_ABSENT)
    retry: RetryPolicy = Field(default=_ABSENT)
    timeout_seconds: TimeoutSeconds = Field(default=_ABSENT)
    misfire_grace_seconds: MisfireGraceSeconds = Field(default=_ABSENT)
    overlap: OverlapPolicy = Field(default=_ABSENT)
    tags: Tags = Field(default=_ABSENT)

    @field_validator("*", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("must not be null; leave the field out to keep its value")
        return value

    def changes(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


class RedriveRequest(BaseModel):
    """POST /v1/dlq/redrive: every FAILED run of the caller (no body, or no run_ids), or just these."""

    model_config = ConfigDict(extra="forbid")

    run_ids: list[str] | None = Field(default=None, min_length=1, max_length=100)


@dataclass(frozen=True)
class RedriveReport:
    redriven: int
    run_ids: list[str]
    not_redriven: list[str]  # unknown ids, other tenants' ids, and runs that are not FAILED (any more)
    more: bool  # "all" stopped at MAX_REDRIVE; call again for the rest


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

    def new_job(self, tenant: str, spec: JobSpec, *, now: datetime, job_id: str | None = None) -> Job:
        """The job `spec` describes, checked (type, payload, size, a future occurrence); nothing is written."""
        self.check_payload(spec.type, spec.payload)
        job = Job(
            id=job_id or new_job_id(to_ms(now)),
            tenant=tenant,
            created_at=now,
            updated_at=now,
            **spec.model_dump(exclude={"schedule", "retry"}),
            schedule=spec.schedule.stored(),
            retry=spec.retry,
        )
        job = job.model_copy(update={"next_run_at": self.first_occurrence(job, now)})
        self.check_item_size(job)
        return job

    def check_item_size(self, job: Job) -> None:
        """The job fits one DynamoDB item with room to spare: measured as stored, before anything is written
        (a write DynamoDB refuses would come after the idempotency key was taken). Names the larger of the two
        parts a caller controls without a bound of their own, payload and tags."""
        size = item_bytes(job_to_item(job, self.store.shards))
        if size <= MAX_JOB_ITEM_BYTES:
            return
        payload = len(json.dumps(job.payload, separators=(",", ":")).encode())
        tags = sum(len(k.encode()) + len(v.encode()) for k, v in job.tags.items())
        field = "payload" if payload >= tags else "tags"
        raise ItemTooLarge(field, size, MAX_JOB_ITEM_BYTES, f"payload {payload} bytes, tags {tags} bytes")

    def create_job(self, tenant: str, spec: JobSpec) -> Job:
        job = self.new_job(tenant, spec, now=self.clock.now())
        if not self.store.put_new_job(job):  # durable before acknowledged
            raise Conflict(f"job {job.id} exists already")  # pragma: no cover - ids are 75 random bits
        logger.info("job created", extra={"job_id": job.id, "type": job.type, "next_run_at": job.next_run_at})
        self._dispatch_soon(job)
        return job

    def create_job_once(
        self, tenant: str, spec: JobSpec, *, catalog: Catalog, key: str, request_hash: str
    ) -> tuple[dict[str, Any], bool]:
        """Create under an Idempotency-Key. Returns (the first response's body, whether this is a replay).

        The same key with the same body within 24 h returns the first response (even once the job has
        changed, or its `at` has passed); a different body is a Conflict. The record is written only after
        the request proved valid, so bad input writes nothing; the job id is recorded before the job is
        written, so a request that dies in between is completed by its retry, under the same id.
        """
        earlier = catalog.find_idempotency_record(tenant, key, now=self.clock.now())
        if earlier is not None:
            return self._replay(tenant, spec, catalog, earlier, request_hash)
        now = self.clock.now()
        job = self.new_job(tenant, spec, now=now)
        try:
            earlier = catalog.claim_idempotency_key(tenant, key, request_hash=request_hash, job_id=job.id, now=now)
        except IdempotencyMismatch:
            raise self._key_reused(key) from None
        if earlier is not None:  # a concurrent request with the same key won
            return self._replay(tenant, spec, catalog, earlier, request_hash)
        try:
            job = self._put_or_get(job)
            body = job.model_dump(mode="json")
            catalog.save_idempotent_response(tenant, key, job_id=job.id, response=body)
        except Exception:
            self._release_unless_created(catalog, tenant, key, job.id)
            raise
        return body, False

    def _release_unless_created(self, catalog: Catalog, tenant: str, key: str, job_id: str) -> None:
        """After a failure between claiming the key and saving the response: if the job was not written, free
        the key (a failed request must not burn it, or the corrected retry gets a 409). If it was written, or
        we cannot tell, the record stays: it names the job, so a retry returns that job instead of a second."""
        try:
            created = self.store.get_job(job_id) is not None
        except Exception:
            logger.exception("could not tell whether the job was written; the idempotency record stays")
            return
        if created:
            return
        try:
            catalog.release_idempotency_key(tenant, key, job_id=job_id)
        except Exception:
            logger.exception("could not release the idempotency key", extra={"job_id": job_id})

    @staticmethod
    def _key_reused(key: str) -> Conflict:
        return KeyReused(key)

    def _replay(
        self, tenant: str, spec: JobSpec, catalog: Catalog, earlier: IdempotencyRecord, request_hash: str
    ) -> tuple[dict[str, Any], bool]:
        if earlier.request_hash != request_hash:
            raise self._key_reused(earlier.key)
        if earlier.response is not None:
            return earlier.response, True
        # The first request has not answered yet (in flight, or it died): finish it under its recorded id.
        job = self.store.get_job(earlier.job_id)
        if job is None:
            job = self._put_or_get(self.new_job(tenant, spec, now=self.clock.now(), job_id=earlier.job_id))
        body = job.model_dump(mode="json")
        catalog.save_idempotent_response(tenant, earlier.key, job_id=job.id, response=body)
        return body, True

    def _put_or_get(self, job: Job) -> Job:
        """Write a new job; if a racing request with the same idempotency key wrote it first, that one stands."""
        if not self.store.put_new_job(job):
            existing = self.store.get_job(job.id)
            if existing is None:  # pragma: no cover - the condition failed because it exists
                raise Conflict(f"job {job.id} is being created concurrently; try again")
            return existing
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
        queued = self._requeue(run, self.clock.now())
        if queued is None:
            raise Conflict("the run changed meanwhile; try again")
        self._send_requeued([queued])
        return queued

    def _requeue(self, run: Run, now: datetime) -> Run | None:
        """FAILED -> QUEUED in the table (conditional); the caller sends it. None if it was not FAILED."""
        if not self.store.requeue_failed_run(run, now=now, redispatch_at=now + self.dispatcher.redispatch_after):
            return None
        return run.model_copy(
            update={
                "status": RunStatus.QUEUED,
                "attempts": 0,
                "error": None,
                "enqueued_at": now,
                "finished_at": None,
                "lease_until": None,
            }
        )

    def _send_requeued(self, runs: list[Run]) -> None:
        self.dispatcher.send_runs(runs)  # to start now; the run keeps its original scheduled_for

    # ------------------------------------------------------------ update

    def update(self, tenant: str, job_id: str, patch: JobUpdate) -> Job:
        """Change name, payload, schedule, priority, retry, timeouts, overlap or tags.

        A new schedule recomputes the next occurrence from now (runs already queued for the next couple of
        minutes still run); other changes keep the pending occurrence, so an update never loses a run.
        The payload is checked against the job's type, as at create. Nothing is written if anything is bad.
        """
        changes = patch.changes()

        def change(job: Job, now: datetime) -> Job | None:
            if job.state in (JobState.CANCELLED, JobState.COMPLETED):
                raise Conflict(f"cannot update a {job.state.value} job")
            if not changes:
                return None
            if "payload" in changes:
                self.check_payload(job.type, changes["payload"])
            updated = Job.model_validate({**job.model_dump(), **_dumped(changes)})
            if "schedule" in changes and updated.schedule != job.schedule:
                updated = updated.model_copy(update={"next_run_at": self.first_occurrence(updated, now)})
            self.check_item_size(updated)
            return updated

        job = self._change(tenant, job_id, change)
        if "schedule" in changes or "priority" in changes:
            self._dispatch_soon(job)
        return job

    # ------------------------------------------------------------ listings (catalog)

    def list_jobs(self, catalog: Catalog, tenant: str, **filters: Any) -> Page[Job]:
        return catalog.list_jobs(tenant, **filters)

    def list_runs(
        self,
        catalog: Catalog,
        tenant: str,
        job_id: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        status: RunStatus | None = None,
    ) -> Page[Run]:
        self.get_job(tenant, job_id)  # 404 unless it is the caller's job
        return catalog.list_runs(tenant, job_id, limit=limit, cursor=cursor, status=status)

    def list_dlq(
        self, catalog: Catalog, tenant: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Run]:
        return catalog.list_failed_runs(tenant, limit=limit, cursor=cursor)

    def redrive(self, catalog: Catalog, tenant: str, run_ids: list[str] | None = None) -> RedriveReport:
        """Re-queue the caller's FAILED runs: all of them (up to MAX_REDRIVE per call), or the ones named."""
        now = self.clock.now()
        queued: list[Run] = []
        not_redriven: list[str] = []
        more = False
        if run_ids is None:
            for index, run in enumerate(catalog.iter_failed_runs(tenant, max_items=MAX_REDRIVE + 1)):
                if index == MAX_REDRIVE:
                    more = True
                    break
                requeued = self._requeue(run, now)
                if requeued is None:
                    not_redriven.append(run.id)
                else:
                    queued.append(requeued)
        else:
            for run_id in dict.fromkeys(run_ids):  # each once, in the order given
                try:
                    run = self.get_run(tenant, run_id)
                except NotFound:
                    not_redriven.append(run_id)
                    continue
                requeued = self._requeue(run, now) if run.status is RunStatus.FAILED else None
                if requeued is None:
                    not_redriven.append(run_id)
                else:
                    queued.append(requeued)
        self._send_requeued(queued)
        logger.info("dlq redriven", extra={"tenant": tenant, "redriven": len(queued), "more": more})
        return RedriveReport(len(queued), [r.id for r in queued], not_redriven, more)

    # ------------------------------------------------------------ results

    def get_result(self, tenant: str, run_id: str) -> Any:
        """The run's result document, as stored in S3 (for echo, the payload itself)."""
        run = self.get_run(tenant, run_id)
        document = self.results.read(run)
        if document is None:
            raise NotFound(f"run {run_id} has no result yet (status {run.status.value})")
        return document


def _dumped(changes: dict[str, Any]) -> dict[str, Any]:
    return {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in changes.items()}
