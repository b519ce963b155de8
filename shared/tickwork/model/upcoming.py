"""The times an operator reads on a job or a workflow, as opposed to the ones the scheduler keeps.

The stored `next_run_at` is the tick's cursor: the first occurrence it has not claimed yet. The tick claims up to
its horizon ahead, so the occurrences from now up to that cursor are claimed (their runs QUEUED, or recorded
skipped) and still to come. What a reader is shown as `next_run_at` is the next occurrence whether claimed or not.
A job's last run is the last one that started (tickwork.store.listings: `started`), never a QUEUED one to come.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypeVar

from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.model.workflow.definition import Workflow

Scheduled = TypeVar("Scheduled", Job, Workflow)


def next_occurrence(item: Job | Workflow, now: datetime) -> datetime | None:
    """The next occurrence at or after `now`, claimed or not. Only an ACTIVE item's claims run ahead of its cursor;
    any other's cursor is what it is (a paused one's, for one, is where its claims resume). A cursor already past
    is an occurrence not yet claimed, overdue: it comes first. The claims ahead began where the cursor was last set
    from the clock (a create, an update, a resume schedules what comes after its instant), so an occurrence at that
    very instant was never claimed. One schedule step from `now`: bounded as the schedule is."""
    cursor = item.next_run_at
    if item.state is not JobState.ACTIVE or (cursor is not None and cursor <= now):
        return cursor
    set_at = max(t for t in (item.created_at, item.updated_at, item.resumed_at) if t is not None)
    claimed_next = item.next_occurrence_after(max(now - timedelta(milliseconds=1), set_at))
    if cursor is None or claimed_next is None:  # no cursor: the schedule's last occurrences are claimed
        return claimed_next
    return min(cursor, claimed_next)


def as_shown(item: Scheduled, now: datetime) -> Scheduled:
    """The item as an API answer shows it: its `next_run_at` the next occurrence, claimed or not."""
    return item.model_copy(update={"next_run_at": next_occurrence(item, now)})
