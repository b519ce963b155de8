"""Stuck runs (docs/operations.md, "Stuck runs"): of the due index's entries a tick reads anyway, the runs QUEUED
longer than a threshold past their time, or RUNNING past their lease with no outcome. Pure: no read of its own.

A run without an outcome keeps its entry in the due index, and every re-send moves it at most one recovery on
(tickwork.tick.resender), so a stuck run comes due again within minutes: each tick counts the stuck runs among
the entries it read (`StuckRuns`). A run a gate keeps deferring is the exception (each deferral moves its entry
past the tick's reads): the executor counts it at each deferral (`StuckRunsHeldBack`), with the same decision
(tickwork.model.stuck), and `StuckRunsAlarm` watches both. A listing of the stuck runs (`GET /v1/runs/stuck`)
reads as far ahead as a stuck run's entry may be (`stuck_read_ahead`), so it sees each of them every time, not
only when its entry is due."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.clock import from_ms, stored_instant, to_ms
from tickwork.model.ids import ItemKind
from tickwork.model.schedule import UtcDatetime
from tickwork.model.states import RunStatus
from tickwork.model.stuck import STUCK_QUEUED_AFTER, queued_too_long
from tickwork.store import DueItem
from tickwork.tick.resender import RESEND_DEFER_LIMIT


class StuckReason(StrEnum):
    QUEUED_PAST_THRESHOLD = "queued_past_threshold"
    RUNNING_PAST_LEASE = "running_past_lease"


class StuckRun(BaseModel):
    """A stuck run, as its due-index entry shows it."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    job_id: str = Field(description="Its job's id (a workflow step's run: its workflow's).")
    tenant: str
    status: RunStatus = Field(description="QUEUED or RUNNING.")
    scheduled_for: UtcDatetime
    since: UtcDatetime = Field(
        description="QUEUED: its scheduled time (stuck 5 minutes after it); RUNNING: when its lease ended."
    )
    reason: StuckReason


def stuck_run_of(item: DueItem, now: datetime, *, queued_after: timedelta = STUCK_QUEUED_AFTER) -> StuckRun | None:
    """The run `item` holds, if it is stuck at `now` (whenever its entry is due)."""
    if item.kind is not ItemKind.RUN:
        return None
    a = item.attrs
    status = a.get("status")
    if status == RunStatus.QUEUED.value and "scheduled_for" in a:
        since = stored_instant(a["scheduled_for"])
        reason = StuckReason.QUEUED_PAST_THRESHOLD
        stuck = queued_too_long(since, now, queued_after=queued_after)
    elif status == RunStatus.RUNNING.value and "lease_until_ms" in a:
        since = from_ms(int(a["lease_until_ms"]))
        reason = StuckReason.RUNNING_PAST_LEASE
        stuck = to_ms(since) < to_ms(now)
    else:
        return None
    if not stuck:
        return None
    return StuckRun(
        run_id=str(a["run_id"]),
        job_id=str(a["job_id"]),
        tenant=str(a["tenant"]),
        status=RunStatus(status),
        scheduled_for=stored_instant(a["scheduled_for"]),
        since=since,
        reason=reason,
    )


def stuck_runs(items: Iterable[DueItem], now: datetime, *, queued_after: timedelta = STUCK_QUEUED_AFTER) -> list[str]:
    """The run ids among `items` whose entries are due at `now` and that are stuck then (the tick's count)."""
    now_ms = to_ms(now)
    found = (stuck_run_of(i, now, queued_after=queued_after) for i in items if i.due_at <= now_ms)
    return [run.run_id for run in found if run is not None]


def stuck_read_ahead(redispatch_after: timedelta, deferred_ahead: timedelta) -> timedelta:
    """How far past now a stuck run's entry may be due: a re-send moves it redispatch_after on, and
    RESEND_DEFER_LIMIT more into a backlog; a leased run's follows its lease by redispatch_after; a run a gate
    deferred (held back by a limit, or waiting for its job's running run) is looked after `deferred_ahead` on."""
    return max(redispatch_after + RESEND_DEFER_LIMIT, deferred_ahead)
