"""Deadlines (docs/operations.md, "Deadlines"): a job's run must end within `within_seconds` of its occurrence's
scheduled time; what a miss does (`on_miss`), the latest a deadline may be, and a run's slack. Pure."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.policies import RetryPolicy


class OnMiss(StrEnum):
    ALERT = "ALERT"  # the miss is recorded, counted and published; the run goes on
    CANCEL = "CANCEL"  # ...and the run is stopped cooperatively and recorded FAILED `deadline`


# The error type a run stopped by its deadline is recorded FAILED with.
DEADLINE_ERROR = "deadline"


class Deadline(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    within_seconds: int = Field(
        gt=0, le=7 * 86_400, description="From the occurrence's scheduled time to the run's end, at most."
    )
    on_miss: OnMiss = OnMiss.ALERT

    def due(self, occurrence: datetime) -> datetime:
        """The run of this occurrence must have ended by then."""
        return occurrence + timedelta(seconds=self.within_seconds)


def longest_run_seconds(
    *, timeout_seconds: int, max_run_seconds: int, retry: RetryPolicy, misfire_grace_seconds: int, jitter_seconds: int
) -> float:
    """The latest after its occurrence a job's run ends when nothing holds it back. It starts as late as its
    misfire grace (a late claim) or its jitter, whichever is later (a late claim sends a jittered run at once).
    Its handler may yield (docs/durable-runs.md) and go on over segments for up to `max_run_seconds` in all; each
    attempt that fails ends with a segment of at most its timeout (max_run_seconds at most), not counted there,
    then waits the longest backoff. A deadline past this can never be missed by the run itself, only by a
    backlog: refused as a mistake."""
    segment = min(timeout_seconds, max_run_seconds)
    retries = retry.max_attempts - 1
    start = max(misfire_grace_seconds, jitter_seconds)
    return start + max_run_seconds + retries * (segment + retry.max_backoff_seconds)


def slack_seconds(deadline_at: datetime, now: datetime) -> float:
    """How long before its deadline a run is (negative: past it)."""
    return (deadline_at - now).total_seconds()


def missed(deadline_at: datetime, *, finished_at: datetime | None, now: datetime) -> bool:
    """A run missed its deadline: it ended after it, or has not ended by `now`, which is past it."""
    if finished_at is not None:
        return finished_at > deadline_at
    return now >= deadline_at
