"""Retrying or redriving many of a tenant's FAILED runs at once (POST /v1/bulk/runs), named by id or chosen by the
filters of a runs search (GET /v1/runs: job, workflow, type, tag, trigger, error type, a time range).

Each run is re-queued by the same call as its own retry's (RunRedrive.requeue_each: FAILED -> QUEUED, a
conditional write with its own audit record, `run.retry` or `run.redrive`), and answered on its own: re-queued, not
found, or refused with the reason. A run re-queued is not FAILED any more, so a repeated request re-queues nothing
twice. A request takes at most MAX_BULK_RUNS: `run_ids` names at most that many, and a search's selection is read
from the runs index (never a Scan) one page at a time, answered with the search's cursor for the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from tickwork.control.redrive import RunRedrive
from tickwork.control.run_searches import TAG_FILTER_MAX_LENGTH, TAG_FILTER_PATTERN, RunSearches, RunSearchFilters
from tickwork.model.audit import Attribution
from tickwork.model.errors import InvalidInput
from tickwork.model.retryable import NotRetried, NotRetryableReason
from tickwork.model.run import Run
from tickwork.model.schedule import CallerInstant
from tickwork.model.states import RunStatus, RunTrigger
from tickwork.observability import logger

MAX_BULK_RUNS = 100


class BulkRunAction(StrEnum):
    RETRY = "retry"  # any FAILED run, dismissed or not; audited run.retry
    REDRIVE = "redrive"  # the DLQ's: a FAILED run not dismissed; audited run.redrive


class BulkRunOutcome(StrEnum):
    OK = "ok"  # re-queued now
    NOT_FOUND = "not_found"  # unknown, or another tenant's
    REFUSED = "refused"  # not re-queued (not FAILED, a workflow's step, dismissed, ...): `reason` and `message` say


class RunFilterSpec(BaseModel):
    """A runs search's filters, as GET /v1/runs takes them in its query (and combines them: AND)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    status: Literal["FAILED"] = Field(default="FAILED", description="FAILED, the only status re-queued.")
    job_id: Annotated[str, StringConstraints(pattern=r"^j[0-9a-z]{25}$")] | None = None
    workflow_id: Annotated[str, StringConstraints(pattern=r"^w[0-9a-z]{25}$")] | None = None
    job_type: str | None = Field(default=None, alias="type", max_length=64, description="Jobs of this type.")
    tag: Annotated[str, StringConstraints(pattern=TAG_FILTER_PATTERN, max_length=TAG_FILTER_MAX_LENGTH)] | None = Field(
        default=None, description="`key=value`: jobs whose tag `key` is `value`."
    )
    trigger: RunTrigger | None = None
    error_type: str | None = Field(default=None, max_length=256)
    since: CallerInstant | None = Field(default=None, alias="from", description="An instant with its offset.")
    until: CallerInstant | None = Field(default=None, alias="to", description="An instant with its offset.")
    on: Literal["scheduled_for", "ended_at"] = Field(
        default="scheduled_for", description="The instant `from` and `to` bound."
    )

    def search(self) -> RunSearchFilters:
        """The search's filters."""
        tag = tuple(self.tag.split("=", 1)) if self.tag is not None else None
        return RunSearchFilters(
            status=RunStatus.FAILED,
            job_id=self.job_id,
            workflow_id=self.workflow_id,
            job_type=self.job_type,
            tag=(tag[0], tag[1]) if tag is not None else None,
            trigger=self.trigger,
            error_type=self.error_type,
            since=self.since,
            until=self.until,
            on=self.on,
        )


def _run_ids_or_filters(schema: dict[str, Any]) -> None:
    """Exactly one of the two in the OpenAPI document too, null counting as absent (as the server counts it)."""
    schema["oneOf"] = [{"required": [k], "properties": {k: {"not": {"type": "null"}}}} for k in ("run_ids", "filters")]


class BulkRunsRequest(BaseModel):
    """POST /v1/bulk/runs: what to do, to which runs (`run_ids`, or the runs a search's `filters` find)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_run_ids_or_filters)

    action: BulkRunAction
    run_ids: list[Annotated[str, StringConstraints(min_length=1, max_length=128)]] | None = Field(
        default=None, min_length=1, max_length=MAX_BULK_RUNS, description="These runs (not with filters)."
    )
    filters: RunFilterSpec | None = Field(
        default=None, description="The FAILED runs a runs search finds (`{}`: every one), newest first."
    )
    cursor: str | None = Field(
        default=None, max_length=512, description="A search's next page: the previous answer's `next_cursor`."
    )


class BulkRunResult(BaseModel):
    run_id: str
    outcome: BulkRunOutcome
    status: RunStatus | None = Field(default=None, description="The run's status after (null: not found).")
    reason: NotRetryableReason | None = Field(default=None, description="Why it was not re-queued.")
    message: str | None = Field(default=None, description="Why, for people, with what to do instead.")


class BulkRunsResult(BaseModel):
    action: BulkRunAction
    items: list[BulkRunResult] = Field(description="One per run selected, in the request's or the search's order.")
    next_cursor: str | None = Field(
        description=f"More runs may match (at most {MAX_BULK_RUNS} a request): send the request again with this "
        "as `cursor`; null when done."
    )


@dataclass(frozen=True)
class BulkRuns:
    redrive: RunRedrive
    searches: RunSearches

    def apply(self, tenant: str, request: BulkRunsRequest, *, by: Attribution | None = None) -> BulkRunsResult:
        candidates, next_cursor = self._selected(tenant, request)
        verb = request.action.value
        outcomes = self.redrive.requeue_each(
            candidates,
            now=self.redrive.clock.now(),
            verb=verb,
            by=by,
            refuse_dismissed=request.action is BulkRunAction.REDRIVE,
        )
        runs = dict(candidates)
        items = [self._result(run_id, runs[run_id], outcome) for run_id, outcome in outcomes.items()]
        logger.info(
            "runs re-queued in bulk",
            extra={
                "tenant": tenant,
                "action": verb,
                "runs": len(items),
                "requeued": sum(item.outcome is BulkRunOutcome.OK for item in items),
                "more": next_cursor is not None,
            },
        )
        return BulkRunsResult(action=request.action, items=items, next_cursor=next_cursor)

    def _selected(self, tenant: str, request: BulkRunsRequest) -> tuple[list[tuple[str, Run | None]], str | None]:
        """The runs to act on (None: not the caller's), and the search's cursor for the next page."""
        if (request.run_ids is None) == (request.filters is None):
            raise InvalidInput.one("filters", "give exactly one of run_ids and filters")
        if request.run_ids is not None:
            if request.cursor is not None:
                raise InvalidInput.one("cursor", "only a search by filters is paged; run_ids are answered whole")
            return [(run_id, self.redrive.named(tenant, run_id)) for run_id in dict.fromkeys(request.run_ids)], None
        assert request.filters is not None
        page = self.searches.search(tenant, request.filters.search(), limit=MAX_BULK_RUNS, cursor=request.cursor)
        return [(run.id, run) for run in page.items], page.next_cursor

    @staticmethod
    def _result(run_id: str, run: Run | None, outcome: Run | NotRetried) -> BulkRunResult:
        if isinstance(outcome, Run):
            return BulkRunResult(run_id=run_id, outcome=BulkRunOutcome.OK, status=outcome.status)
        if run is None:
            return BulkRunResult(
                run_id=run_id, outcome=BulkRunOutcome.NOT_FOUND, reason=outcome.reason, message=outcome.message
            )
        return BulkRunResult(
            run_id=run_id,
            outcome=BulkRunOutcome.REFUSED,
            status=run.status,
            reason=outcome.reason,
            message=outcome.message,
        )
