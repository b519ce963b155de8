"""Freezes: a stretch of time in which the selected jobs (by tags, by id, or all of a tenant's, or every tenant's)
run nothing; their blocked occurrences are skipped `freeze`, or deferred to the freeze's end.

Pure (no I/O): what a freeze selects and blocks, and which runs it may hold back (`subject_to_freezes`);
tickwork.model.blocking decides with it as with a calendar.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from tickwork.model.blocking import OnBlocked
from tickwork.model.budget import StepBudget
from tickwork.model.errors import InvalidInput
from tickwork.model.policies import StoredTags, Tags
from tickwork.model.run import Run
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.model.run_events import RunEvent, freeze_event
from tickwork.model.schedule import CallerInstant, UtcDatetime
from tickwork.model.states import RunTrigger, SkipReason

EVERY_TENANT = "*"  # the owner of an admin's freeze over every tenant
MAX_FREEZE_SECONDS = 30 * 24 * 3600


def subject_to_freezes(run: Run, *, leased: bool) -> bool:
    """Whether a freeze may hold `run` back: a job's scheduled run that has not started yet. Never a trigger's
    (debounced or not) or a backfill's (asked for), a workflow step's (held at its workflow's claim), nor a run
    started before (a retry, one taken over, a durable run between its segments) or asked for again by hand (a
    retry or a redrive): those run on. The one rule for a freeze's creation, which marks the QUEUED runs claimed
    before it (`leased` False: `run` as stored), and the executor's freeze gate (`leased` True: `run` as its
    lease returned it, this start counted in its attempts)."""
    if run.trigger is not RunTrigger.SCHEDULE or run.workflow_run_id is not None:
        return False
    started_before = run.attempts - 1 if leased else run.attempts
    return started_before <= 0 and run.segments == 0 and run.requeues == 0


class FreezeSelector(BaseModel):
    """Which jobs and workflows it freezes: exactly one of `tags` (every one of them), `job_ids`, or `all`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {"required": [k], "properties": {k: {"not": {"type": "null"}}}} for k in ("tags", "job_ids", "all")
            ]
        },
    )

    tags: StoredTags | None = Field(default=None, min_length=1)
    job_ids: list[str] | None = Field(default=None, min_length=1, max_length=100)
    all: Literal[True] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> FreezeSelector:
        given = [k for k in ("tags", "job_ids", "all") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"exactly one of tags, job_ids or all is required; got {', '.join(given) or 'none'}")
        return self

    def selects(self, job_id: str, tags: Mapping[str, str]) -> bool:
        if self.all:
            return True
        if self.job_ids is not None:
            return job_id in self.job_ids
        assert self.tags is not None
        return all(tags.get(k) == v for k, v in self.tags.items())


# A selected job's or workflow's id (tickwork.model.ids: j or w, and 25 characters). Every tick reads every freeze,
# so a freeze stays small: with these and Tags, a freeze item is some 25 KB at most.
SelectedId = Annotated[str, Field(min_length=1, max_length=26)]


class FreezeSelectorSpec(FreezeSelector):
    """A selector as a caller gives it: ids of an id's length, and tags within AWS's bounds (as a job's). Stored
    selectors are read as FreezeSelector."""

    tags: Tags | None = Field(default=None, min_length=1)
    job_ids: list[SelectedId] | None = Field(default=None, min_length=1, max_length=100)


def _until_or_for_seconds(schema: dict[str, Any]) -> None:
    """Exactly one of the two in the OpenAPI document too, null counting as absent (as the server counts it)."""
    schema["oneOf"] = [
        {"required": [k], "properties": {k: {"not": {"type": "null"}}}} for k in ("until", "for_seconds")
    ]


class FreezeSpec(BaseModel):
    """POST /v1/freezes: what to freeze, when, and why."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra=_until_or_for_seconds)

    selector: FreezeSelectorSpec
    from_: CallerInstant | None = Field(default=None, alias="from", description="When it starts (default: now).")
    until: CallerInstant | None = Field(default=None, description="When it ends (or give for_seconds).")
    for_seconds: int | None = Field(default=None, ge=1, le=MAX_FREEZE_SECONDS, description="How long it lasts.")
    reason: str = Field(min_length=1, max_length=500)
    on_blocked: OnBlocked = OnBlocked.SKIP
    every_tenant: StrictBool = Field(default=False, description="Freeze every tenant's selected jobs (an admin's).")

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """[start, end); InvalidInput naming `until` when it ends before it starts, or has already ended."""
        if (self.until is None) == (self.for_seconds is None):
            raise InvalidInput.one("until", "give exactly one of until and for_seconds")
        start = self.from_ or now
        end = self.until if self.until is not None else start + timedelta(seconds=self.for_seconds or 0)
        if end <= start:
            raise InvalidInput.one("until", "must be after from (a freeze ending before it starts)")
        if end <= now:
            raise InvalidInput.one("until", "must be in the future")
        if end - start > timedelta(seconds=MAX_FREEZE_SECONDS):
            raise InvalidInput.one("until", f"a freeze lasts at most {MAX_FREEZE_SECONDS} s (30 days)")
        return start, end


class Freeze(BaseModel):
    """A stored freeze. `tenant` is its owner's (EVERY_TENANT: an admin's over every tenant); `lifted_at` and
    `lifted_by` are set when DELETE lifted it early."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    id: str
    tenant: str
    selector: FreezeSelector
    from_: UtcDatetime = Field(alias="from")
    until: UtcDatetime
    reason: str
    on_blocked: OnBlocked = OnBlocked.SKIP
    created_at: UtcDatetime
    lifted_at: UtcDatetime | None = None
    lifted_by: str | None = Field(default=None, description="Who lifted it early (the caller's tenant).")

    @property
    def ends_at(self) -> datetime:
        return min(self.until, self.lifted_at) if self.lifted_at is not None else self.until

    @property
    def skip_reason(self) -> SkipReason:
        return SkipReason.FREEZE

    def applies_to(self, tenant: str, job_id: str, tags: Mapping[str, str]) -> bool:
        return self.tenant in (tenant, EVERY_TENANT) and self.selector.selects(job_id, tags)

    def blocks(self, at: datetime, budget: StepBudget | None = None) -> bool:
        return self.from_ <= at < self.ends_at

    def allowed_from(self, at: datetime, budget: StepBudget | None = None) -> datetime | None:
        return self.ends_at if self.blocks(at) else at

    @property
    def starts(self) -> bool:
        """It reaches its `from`: one lifted before then never starts (nor ends)."""
        return self.from_ <= self.ends_at

    def events_due(self, now: datetime, *, started_recorded: bool, ended_recorded: bool) -> list[RunEventKind]:
        """Its `Freeze Started` and `Freeze Ended` facts that have happened by `now` and are not yet recorded,
        in their order."""
        due = []
        if self.starts and self.from_ <= now and not started_recorded:
            due.append(RunEventKind.FREEZE_STARTED)
        if self.starts and self.ends_at <= now and not ended_recorded:
            due.append(RunEventKind.FREEZE_ENDED)
        return due

    def event(self, kind: RunEventKind) -> RunEvent:
        """Its `Freeze Started` (at its `from`) or `Freeze Ended` (at its end: `until`, or when it was lifted)."""
        at = self.from_ if kind is RunEventKind.FREEZE_STARTED else self.ends_at
        fields = self.model_dump(mode="json", exclude={"id", "tenant"})
        return freeze_event(
            kind, freeze_id=self.id, tenant=None if self.tenant == EVERY_TENANT else self.tenant, at=at, detail=fields
        )
