"""What a valid job is: a caller's spec made into a checked Job, and the checks a change must pass too.

Nothing here writes: a job is checked whole (type, payload, size as stored, a future occurrence) before any
write, so bad input writes nothing (not even an idempotency record).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from tickwork.control.api_bodies import JobSpec
from tickwork.control.calendars import check_calendars_visible
from tickwork.jobtypes import UnknownJobType, registry
from tickwork.model.claim_plan import CATCHUP_TOLERANCE
from tickwork.model.clock import to_ms
from tickwork.model.errors import FieldError, InvalidInput, ItemTooLarge, PayloadTooLarge
from tickwork.model.ids import new_job_id
from tickwork.model.job import Job
from tickwork.model.policies import MAX_PAYLOAD_BYTES
from tickwork.model.targets import DEFAULT_TARGETS, TargetRules
from tickwork.model.variants import Variant, variant_errors
from tickwork.model.workflow.definition import Workflow
from tickwork.store import item_bytes, job_to_item
from tickwork.store.calendars import CalendarRecords

# The whole job item as stored (payload, tags, schedule, keys, index attributes) is checked against this
# before anything is written: DynamoDB's 400 KB item limit less room for what the tick adds to the item.
MAX_JOB_ITEM_BYTES = 350 * 1024


@dataclass(frozen=True)
class JobFactory:
    """Builds checked jobs from specs. `shards` is the store's (the item is measured as it would be stored)."""

    shards: int
    # Where job types may reach (the http allowlist, the invokable functions): the payload check needs them.
    targets: TargetRules = DEFAULT_TARGETS
    # Where the calendars a job names are looked up (None: not checked, as in tests that build jobs alone).
    calendars: CalendarRecords | None = None

    def new_job(self, tenant: str, spec: JobSpec, *, now: datetime, job_id: str | None = None) -> Job:
        """The job `spec` describes, checked (type, payload, size, a future occurrence); nothing is written."""
        self.check_payload(tenant, spec.type, spec.payload)
        self.check_variants(tenant, spec.type, spec.payload, spec.variants)
        check_calendars_visible(self.calendars, tenant, spec.calendars, now=now)
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

    def check_payload(self, tenant: str, job_type: str, payload: dict[str, Any]) -> None:
        """The type exists, its own model accepts the payload (and the secrets it names are the tenant's), and the
        payload fits."""
        try:
            kind = registry.get(job_type)
        except UnknownJobType as exc:
            raise InvalidInput.one("type", str(exc)) from None
        size = len(json.dumps(payload, separators=(",", ":")).encode())
        if size > MAX_PAYLOAD_BYTES:
            raise PayloadTooLarge(size, MAX_PAYLOAD_BYTES)
        try:
            kind.parse(payload, context=self.targets.context(tenant))
        except ValidationError as exc:
            raise InvalidInput.from_validation(exc, prefix="payload") from None

    def check_variants(
        self, tenant: str, job_type: str, payload: dict[str, Any], variants: Sequence[Variant], *, at: str = ""
    ) -> None:
        """Each variant against the job it varies (tickwork.model.variants.variant_errors): every error, at its field."""
        errors = variant_errors(
            variants,
            at=at,
            job_type=job_type,
            payload=payload,
            registered=registry.names(),
            typed_errors=lambda place, kind, merged: self.typed_errors(tenant, place, kind, merged),
        )
        if errors:
            raise InvalidInput(errors)

    def typed_errors(self, tenant: str, at: str, job_type: str, payload: dict[str, Any]) -> list[FieldError]:
        """check_payload's refusals as errors at `at` (a variant's place), none if it passes."""
        try:
            self.check_payload(tenant, job_type, payload)
        except InvalidInput as exc:
            return [FieldError(f"{at}.{e.field}", e.message) for e in exc.errors]
        return []

    def first_occurrence(self, job: Job | Workflow, now: datetime) -> datetime:
        """The first occurrence after `now` of a job's (or a workflow's) schedule, or InvalidInput naming why
        there is none."""
        at = job.schedule.at
        if at is not None and at <= now:
            # Passed while the request was on its way (a slow client, a clock a little ahead): on time, as a
            # tick's occurrence late by less than CATCHUP_TOLERANCE is, and within the job's own grace.
            allowance = min(CATCHUP_TOLERANCE, timedelta(seconds=job.misfire_grace_seconds))
            if now - at >= allowance:
                seconds = int(allowance.total_seconds())
                raise InvalidInput.one("schedule.at", f"must be in the future (or less than {seconds} s past)")
            return at
        first = job.next_occurrence_after(now)
        if first is None:
            field = "schedule.end_at" if job.schedule.end_at is not None else "schedule"
            raise InvalidInput.one(field, "the schedule has no occurrence in the future")
        return first

    def check_item_size(self, job: Job) -> None:
        """The job fits one DynamoDB item with room to spare: measured as stored, before anything is written
        (a write DynamoDB refuses would come after the idempotency key was taken). Names the larger of the two
        parts a caller controls without a bound of their own: payload, tags and variants."""
        size = item_bytes(job_to_item(job, self.shards))
        if size <= MAX_JOB_ITEM_BYTES:
            return
        parts = {
            "payload": len(json.dumps(job.payload, separators=(",", ":")).encode()),
            "tags": sum(len(k.encode()) + len(v.encode()) for k, v in job.tags.items()),
            "variants": len(json.dumps([v.model_dump() for v in job.variants], separators=(",", ":")).encode()),
        }
        field = max(parts, key=lambda name: parts[name])  # the first of the largest, payload on a tie
        said = ", ".join(f"{name} {bytes_} bytes" for name, bytes_ in parts.items())
        raise ItemTooLarge(field, size, MAX_JOB_ITEM_BYTES, said)
