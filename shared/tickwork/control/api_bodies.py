"""The HTTP API's request and response models, in one place.

Requests: JobSpec (create), JobUpdate (PATCH) and RedriveRequest. Responses: jobs and runs are the core models
themselves (tickwork.model.job.Job and Run), serialised with times as ISO-8601 UTC with milliseconds; the models
here wrap them for listings, and describe problem details. The class names are the OpenAPI document's schema
component names.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from copy import copy
from functools import reduce
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StrictBool, WithJsonSchema, create_model, field_validator

from tickwork.control.backfill import DEFAULT_BACKFILL_RUNS, MAX_BACKFILL_RUNS
from tickwork.control.debounce import WindowVerdict
from tickwork.control.region_failover import RegionStatus
from tickwork.control.replication_lag import ReplicationLag
from tickwork.jobtypes import registry
from tickwork.model.audit import AuditRecord
from tickwork.model.calendars import Calendar
from tickwork.model.errors import InvalidInput
from tickwork.model.freezes import Freeze
from tickwork.model.job import Job, JobDefinition
from tickwork.model.policies import (
    Debounce,
    NotCoerced,
    Tags,
)
from tickwork.model.preview import DEFAULT_PREVIEW_COUNT, MAX_PREVIEW_COUNT
from tickwork.model.retryable import NotRetried, RetryVerdict
from tickwork.model.run import Run, RunProgress
from tickwork.model.schedule import CallerInstant, Schedule, UtcDatetime
from tickwork.model.states import RunStatus, SkipReason
from tickwork.model.tenant_settings import TenantSettings
from tickwork.model.variants import VariantRollback, VariantStats
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.definition import Workflow, WorkflowDefinition
from tickwork.model.workflow.runs import WorkflowRunIdentity

PROBLEM_JSON = "application/problem+json"

# ---------------------------------------------------------------- requests


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


def _payload_branches() -> tuple[list[str], list[dict[str, Any]]]:
    """The job types registered (by the time the document is built), and for each, what its payload must be
    (its own model's schema), as the server checks them, and where its handler runs (`x-tickwork-isolation`:
    inline or function; docs/security.md, "Isolation of job code")."""
    names = registry.names()
    branches = []
    for name in names:
        job_type = registry.get(name)
        payload = job_type.payload_model.model_json_schema()
        if "$defs" in payload:  # nested models would need their own components: say only "an object"
            payload = {"type": "object"}
        payload.pop("title", None)
        kind = {"const": name, "x-tickwork-isolation": job_type.isolation.value}
        branch: dict[str, Any] = {"properties": {"type": kind, "payload": payload}}
        if payload.get("required"):
            branch["required"] = ["payload"]
        branches.append(branch)
    return names, branches


def _typed_payloads(schema: dict[str, Any]) -> None:
    """The OpenAPI document says which types exist and what each one's payload must be."""
    names, branches = _payload_branches()
    schema["properties"]["type"]["enum"] = names
    schema["oneOf"] = branches


def _typed_steps(schema: dict[str, Any]) -> None:
    """A workflow's steps, as a request gives them, typed as a job's type and payload are (see _typed_payloads),
    and each compensation's type too. The stored step's component (WorkflowStep) stays as it is: it describes
    responses too."""
    steps = schema["properties"].get("steps")
    if steps is None:
        return
    names, branches = _payload_branches()
    typed = {"type": {"enum": names}, "compensate": {"properties": {"type": {"enum": names}}}}
    steps["items"] = {"allOf": [steps["items"], {"properties": typed}], "oneOf": branches}


class JobSpec(JobDefinition):
    """What a caller submits to create a job."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_typed_payloads)

    # A job's definition as a caller gives it: stricter instants, and tags within AWS's bounds.
    schedule: ScheduleSpec
    tags: Tags = Field(default_factory=dict)


_ABSENT: Any = None  # a JobUpdate field's default: "leave it as it is"


def _no_defaults(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)


class _OptionalNotNullable(BaseModel):
    """A body whose every field is optional and none nullable. The None defaults only mark "absent" (never
    validated, and kept out of the OpenAPI document), and an explicit null is refused by _not_null."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_no_defaults)

    @field_validator("*", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("must not be null; leave the field out")
        return value


class _Patch(_OptionalNotNullable):
    """A PATCH body: an absent field keeps its value."""

    def changes(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


def _patch_of_payload(schema: dict[str, Any]) -> None:
    """A PATCH carries no `type` (it never changes), so which payload model applies is the stored job's: the
    document says the payload is one of the types' payloads, each titled with its type, and which one counts.
    anyOf, not oneOf: the payloads overlap (echo takes any object)."""
    _no_defaults(schema)
    _, branches = _payload_branches()
    schema["properties"]["payload"] = {
        "type": "object",
        "description": "Replaces the payload whole. The server checks it against the payload model of the job's "
        "own `type` (which never changes): the branch titled with that type.",
        "anyOf": [{"title": b["properties"]["type"]["const"], **b["properties"]["payload"]} for b in branches],
    }


def _not_none(annotation: Any) -> Any:
    """The type without its None: an update's field is never null (absent means "leave it")."""
    if get_origin(annotation) in (Union, UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        return reduce(operator.or_, kept)
    return annotation


def _patch_of(
    spec: type[BaseModel],
    name: str,
    doc: str,
    *,
    json_schema_extra: Callable[[dict[str, Any]], None],
    without: frozenset[str] | set[str] = frozenset(),
) -> type[_Patch]:
    """The PATCH body of a create body: each of its fields (but `without`) optional and not nullable, with its
    constraints, description and type-level validators, so a field is declared once (in the definition). The
    definition's model-level validators are not carried: the update's service checks the merged result (the
    jitter against the schedule, for one)."""
    fields: dict[str, Any] = {}
    for field_name, field in spec.model_fields.items():
        if field_name in without:
            continue
        info = copy(field)
        info.default, info.default_factory = _ABSENT, None
        info.annotation = _not_none(field.annotation)
        fields[field_name] = (info.annotation, info)
    model: type[_Patch] = create_model(  # type: ignore[call-overload]
        name,
        __base__=_Patch,
        __doc__=doc,
        __module__=__name__,
        **fields,
    )
    model.model_config["json_schema_extra"] = json_schema_extra
    model.model_rebuild(force=True)
    return model


class WorkflowSpec(WorkflowDefinition):
    """What a caller submits to create a workflow (POST /v1/workflows)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_typed_steps)

    schedule: ScheduleSpec
    tags: Tags = Field(default_factory=dict)


def _patch_of_steps(schema: dict[str, Any]) -> None:
    _no_defaults(schema)
    _typed_steps(schema)


# The update bodies are derived (_patch_of); the type checker sees each as the PATCH body it is.
if TYPE_CHECKING:

    class JobUpdate(_Patch): ...

    class WorkflowUpdate(_Patch): ...

else:
    JobUpdate = _patch_of(
        JobSpec,
        "JobUpdate",
        "What PATCH may change; absent fields stay as they are (`null` is refused). A job's type never changes.",
        without={"type"},
        json_schema_extra=_patch_of_payload,
    )

    WorkflowUpdate = _patch_of(
        WorkflowSpec,
        "WorkflowUpdate",
        "What PATCH /v1/workflows/{id} may change; absent fields stay as they are (`null` is refused). New steps\n"
        "apply to workflow runs that start after the change; a run in progress keeps the steps it started with.",
        json_schema_extra=_patch_of_steps,
    )


class RetryRequest(_OptionalNotNullable):
    """POST /v1/runs/{id}/retry, optional: the run resumes from its last checkpoint (docs/durable-runs.md) unless
    `from_checkpoint` is false; with `payload`, it runs with that payload instead (checked by the job type's model,
    as at create; the audit record and the run say it was edited, and by whom)."""

    model_config = ConfigDict(json_schema_extra=_patch_of_payload)

    from_checkpoint: StrictBool = Field(
        default=True, description="false: remove the run's checkpoint and steps, so that it starts over."
    )
    payload: dict[str, Any] = Field(
        default=_ABSENT,
        exclude_if=lambda v: v is None,
        description="The run's payload from now on, instead of the one it failed with: checked by the job type's "
        "model.",
    )


REDRIVE_WHICH = 'say which runs: {"all": true} for every FAILED run, or {"run_ids": [...]}'


def _run_ids_or_all(schema: dict[str, Any]) -> None:
    _no_defaults(schema)
    schema["oneOf"] = [{"required": ["run_ids"]}, {"required": ["all"]}]


class RedriveRequest(_OptionalNotNullable):
    """POST /v1/dlq/redrive: the caller's FAILED runs named in `run_ids`, or every one with `{"all": true}`;
    exactly one of the two. Everything is never the absence of a body or a field: a cross-site page can send
    a bodiless POST without the browser asking first."""

    model_config = ConfigDict(json_schema_extra=_run_ids_or_all)

    run_ids: list[str] = Field(default=_ABSENT, min_length=1, max_length=100)
    all: Literal[True] = Field(default=_ABSENT, description="Every FAILED run (up to 250 per call).")

    def named(self) -> list[str] | None:
        """The runs to redrive: these ids, or None for every FAILED run. Neither or both is a 422 naming `all`."""
        if "all" in self.model_fields_set:
            if "run_ids" in self.model_fields_set:
                raise InvalidInput.one("all", "not with run_ids: name the runs, or redrive all of them")
            return None
        if "run_ids" not in self.model_fields_set:
            raise InvalidInput.one("all", f"required without run_ids: {REDRIVE_WHICH}")
        return self.run_ids


# ---------------------------------------------------------------- responses


class TriggerRequest(_OptionalNotNullable):
    """POST /v1/jobs/{id}/trigger (a body is optional): the run's own payload, and a debounce of its own (else the
    job's `debounce`, if it has one). The payload is documented as a PATCH's is: the job's own type checks it."""

    model_config = ConfigDict(json_schema_extra=_patch_of_payload)

    # Absent fields are left out of its dump, so that "no body" is documented as the empty object.
    payload: dict[str, Any] = Field(
        default=_ABSENT,
        exclude_if=lambda v: v is None,
        description="This run's payload instead of the job's: checked by the job type's model.",
    )
    debounce: Debounce = Field(
        default=_ABSENT,
        exclude_if=lambda v: v is None,
        description="Triggers with this key within `seconds` (1 to 86,400) of the first collapse into one run at "
        "the window's end, with the last payload (or all of them: `collect`).",
    )


class TriggeredRun(Run):
    """A triggered run; a debounced trigger's says whether the trigger `started` its window or `joined` it."""

    debounce_window: WindowVerdict | None = Field(default=None, exclude_if=lambda v: v is None)


class JobList(BaseModel):
    items: list[Job]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class AuditList(BaseModel):
    items: list[AuditRecord]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class RunList(BaseModel):
    items: list[Run]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class DlqEntry(Run):
    """A FAILED run in the DLQ, with whether its own retry (or a redrive) re-queues it, and if not, why."""

    retry: RetryVerdict


class DlqList(BaseModel):
    items: list[DlqEntry]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class RunLogLine(BaseModel):
    """A line a run's handler logged (`ctx.log`): when, in which attempt, at what level, and the fields it passed."""

    at: UtcDatetime
    attempt: int
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"]
    message: str
    fields: dict[str, Any] = Field(default_factory=dict)


class RunLogs(BaseModel):
    """GET /v1/runs/{run_id}/logs: every attempt's lines, in order (empty while nothing was written)."""

    run_id: str
    lines: list[RunLogLine]
    truncated: bool = Field(description="An attempt logged more than its cap; its last line says how much more.")
    limit_bytes: int = Field(description="The cap on one attempt's lines, in bytes (also at most 1,000 lines).")
    insights_url: str | None = Field(
        description="Deployed: a CloudWatch Logs Insights console link querying the run's lines; null locally."
    )


class WorkflowList(BaseModel):
    items: list[Workflow]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class StepRun(BaseModel):
    """A step of a workflow run: its state, and (once it has one) its run's, which GET /v1/runs/{run_id} shows
    in full."""

    status: RunStatus | Literal["PENDING"] = Field(
        description="PENDING until its upstream steps end; then its run's status, or SKIPPED with the reason."
    )
    run_id: str | None = None
    skip_reason: SkipReason | None = None
    attempts: int = 0
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime | None = None
    progress: RunProgress | None = Field(default=None, description="Its run's last progress report (ctx.progress).")


class WorkflowRun(WorkflowRunIdentity):
    """One occurrence of a workflow (GET /v1/workflow-runs/{id})."""

    skip_reason: SkipReason | None = Field(default=None, description="Why the occurrence itself was skipped.")
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime | None = None
    steps: dict[str, StepRun] = Field(description="Every step of the run's definition, by step id.")
    compensating_for: WorkflowRunStatus | None = Field(
        default=None, description="COMPENSATING and after: FAILED, or CANCELLED by a cancel that asked for it."
    )
    compensations: dict[str, StepRun] = Field(
        default_factory=dict,
        description="Each compensation started or decided, by the id of the step it undoes (docs/workflows.md).",
    )


class WorkflowRunCancel(BaseModel):
    """POST /v1/workflow-runs/{id}/cancel: what the cancel does besides stopping the run."""

    model_config = ConfigDict(extra="forbid")

    compensate: StrictBool = Field(
        default=False,
        description="Compensate the steps that SUCCEEDED (once the running ones have ended), as a failure does.",
    )


class WorkflowRunList(BaseModel):
    items: list[WorkflowRun]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class RedriveResult(BaseModel):
    redriven: int = Field(description="How many FAILED runs were re-queued.")
    run_ids: list[str] = Field(description="The runs re-queued.")
    not_redriven: list[str] = Field(
        description="Runs that were not re-queued: unknown, not the caller's, not FAILED, or not retried so."
    )
    more: bool = Field(description="A redrive of all runs stopped at its per-call cap; call again for the rest.")
    refused: list[NotRetried] = Field(description="Each run of not_redriven, with why (a code, and text).")


class RegionHealth(ReplicationLag, RegionStatus):
    """The regions' roles as this region's replica holds them, and the replication lag of its writes."""


class Health(BaseModel):
    status: str = "ok"
    version: str
    region: RegionHealth = Field(
        description="This region, the RegionMode, the active region and its epoch as this region's replica holds "
        "them, and the replication lag (docs/regions.md; RegionMode eventual only)."
    )


class ProblemField(BaseModel):
    field: str = Field(description="The offending field, as a path: `schedule.cron`, `priority`, `run_ids[0]`.")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details (`application/problem+json`)."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="A URI naming the problem kind; `about:blank` when the status says it all.")
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemField] = Field(default_factory=list)


# ---------------------------------------------------------------- tenants (settings and usage)


class TenantUsage(BaseModel):
    """What a tenant uses now, of what is cheap to know."""

    active_jobs: int | None = Field(
        default=None,
        description="ACTIVE and PAUSED jobs and workflows. Counted only while `max_active_jobs` is set; "
        "null otherwise.",
    )


class CallerView(BaseModel):
    """Who the caller is (GET /v1/me): its tenant, and whether it is an admin (who may read any tenant's, `tenant`
    naming one or `*` every tenant's; the console shows an admin its tenant switcher)."""

    tenant: str
    admin: bool


class TenantView(BaseModel):
    """A tenant's settings (the defaults where none are stored) and usage (GET /v1/tenants/{tenant}, /me)."""

    tenant: str
    settings: TenantSettings
    usage: TenantUsage


# ---------------------------------------------------------------- preview and backfill (docs/policies.md)

PreviewCount = Annotated[int, Field(ge=1, le=MAX_PREVIEW_COUNT), NotCoerced]


class SchedulePreviewRequest(BaseModel):
    """POST /v1/schedules/preview: a schedule's next `count` occurrences after `from` (default: now)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schedule: ScheduleSpec
    count: PreviewCount = DEFAULT_PREVIEW_COUNT
    from_: CallerInstant | None = Field(default=None, alias="from")


class PreviewBlock(BaseModel):
    reason: Literal["calendar", "freeze"]
    by: str = Field(description="The id of the calendar (or freeze) that blocks it.")
    then: Literal["skip", "defer"] = Field(
        description="skip: recorded SKIPPED with the reason. defer: runs at `runs_at` (on_blocked DEFER; a "
        "stretch blocked until the same instant is collapsed by the job's catch-up policy)."
    )
    runs_at: UtcDatetime | None = None


class PreviewItem(BaseModel):
    at: UtcDatetime = Field(description="The occurrence, in UTC.")
    local: str = Field(description="Its wall time in the schedule's time zone, with the offset.")
    dst: Literal["gap", "fold"] | None = Field(
        description="gap: the wall time asked for did not exist (a spring-forward skipped it; it runs at the "
        "gap's end). fold: the wall time is one the zone shows twice (it runs at the first). null otherwise."
    )
    blocked: PreviewBlock | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Present when a calendar of the job, or a freeze over it, blocks it.",
    )


class Preview(BaseModel):
    items: list[PreviewItem]


class CalendarList(BaseModel):
    items: list[Calendar]


class BlockedSpan(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    from_: UtcDatetime = Field(alias="from")
    until: UtcDatetime


class CalendarBlocked(BaseModel):
    """What a calendar blocks over a range (tickwork.model.calendars.blocked_spans)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    calendar_id: str
    from_: UtcDatetime = Field(alias="from")
    until: UtcDatetime
    spans: list[BlockedSpan] = Field(description="In order, each clipped to the range.")
    complete: bool = Field(
        description="Every span of the range; false: the answer stopped at its bound (the spans or the steps "
        "it may take), and the last span may go on."
    )


class FreezeList(BaseModel):
    items: list[Freeze]


class BackfillRequest(BaseModel):
    """POST /v1/jobs/{id}/backfill: runs for the job's past occurrences in [from, to]."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: CallerInstant = Field(alias="from")
    to: CallerInstant
    max_runs: Annotated[int, Field(ge=1, le=MAX_BACKFILL_RUNS), NotCoerced] = DEFAULT_BACKFILL_RUNS


class BackfillResponse(BaseModel):
    created: int = Field(description="Runs created by this call.")
    runs: list[str] = Field(description="Their ids: each is its occurrence's run id.")
    existing: list[UtcDatetime] = Field(
        description="Occurrences skipped because they already had a run (backfilled before, or scheduled)."
    )


class GuardSettings(BaseModel):
    margin: float = Field(description="Rolled back when its failure rate is above the baseline's by more than this.")
    min_runs: int = Field(description="Judged every this many of its runs, with at least as many of the baseline's.")
    alpha: float = Field(description="At most this share of false alarms, in all, for a variant at the margin.")


class JobVariantsView(BaseModel):
    """GET /v1/jobs/{id}/variants: the baseline's and each variant's runs that ended in the window."""

    job_id: str
    since: UtcDatetime
    until: UtcDatetime
    runs_read: int = Field(description="Run records the stats are of (SUCCEEDED or FAILED, newest first).")
    truncated: bool = Field(description="More ended in the window than were read: the stats are of the latest.")
    variants: list[VariantStats]
    guard: GuardSettings
    last_rollback: VariantRollback | None = None
