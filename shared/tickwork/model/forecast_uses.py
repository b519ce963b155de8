"""What a job's forecast (tickwork.model.forecasts) is put to: a claimed run's outlook, `Deadline At Risk`,
`Run Slow`, timeout advice, and what a job's answer shows of its next run. Pure: the claim, the heartbeat, the
outcome and the API's reads call these with what they already hold.

- A run's outlook, when it is claimed: it is expected to end at its start plus the job's p50 (`expected_end_at`),
  to succeed with the job's `p_success`; it carries the p95 and p99 it was claimed with, which its executor
  measures it by (no read of the job).
- Deadline at risk: the run's start plus the p95 passes its deadline. Known at the claim from its scheduled start;
  known again from its real start at its heartbeat or its outcome (a late start). A warning, not a miss.
- Run slow: its handler has run longer than the p99 times SLOW_FACTOR (the setting RUN_SLOW_FACTOR).
- Timeout advice: a timeout more than TIMEOUT_HIGH_FACTOR times the p99 is far too long (a hung run holds its
  slot and its lease that long before it is stopped); one under the p95 stops more than 1 run in 20. The
  suggestion is the p99 times TIMEOUT_SUGGESTED_FACTOR, rounded up to a whole second (5 s at least).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.forecasts import ForecastView
from tickwork.model.schedule import UtcDatetime

DEFAULT_SLOW_FACTOR = 2.0
TIMEOUT_HIGH_FACTOR = 10
TIMEOUT_SUGGESTED_FACTOR = 3
MIN_SUGGESTED_TIMEOUT_SECONDS = 5


class RunOutlook(BaseModel):
    """A run's forecast as claimed (stored on the run, as fields of its own)."""

    model_config = ConfigDict(frozen=True)

    expected_end_at: datetime
    p_success: float
    forecast_p95_ms: int
    forecast_p99_ms: int
    deadline_at_risk: bool


def outlook(view: ForecastView | None, *, start: datetime, deadline_at: datetime | None) -> RunOutlook | None:
    """The outlook of a run starting at `start` (None: its job has no forecast yet)."""
    if view is None:
        return None
    return RunOutlook(
        expected_end_at=start + timedelta(milliseconds=view.p50_ms),
        p_success=view.p_success,
        forecast_p95_ms=view.p95_ms,
        forecast_p99_ms=view.p99_ms,
        deadline_at_risk=deadline_at_risk(start=start, p95_ms=view.p95_ms, deadline_at=deadline_at),
    )


def deadline_at_risk(*, start: datetime, p95_ms: int | None, deadline_at: datetime | None) -> bool:
    """A run that starts at `start` probably ends after its deadline: its start plus its job's p95 passes it."""
    if p95_ms is None or deadline_at is None:
        return False
    return start + timedelta(milliseconds=p95_ms) > deadline_at


def run_slow(*, ran_ms: float, p99_ms: int | None, factor: float = DEFAULT_SLOW_FACTOR) -> bool:
    """A run whose handler has run `ran_ms` is slow: past its job's p99 times `factor`."""
    return p99_ms is not None and ran_ms > p99_ms * factor


class TimeoutVerdict(StrEnum):
    TOO_LONG = "too_long"  # far above the p99
    TOO_SHORT = "too_short"  # under the p95


class TimeoutAdvice(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: TimeoutVerdict = Field(description="`too_long`: far above the p99; `too_short`: under the p95.")
    timeout_seconds: int = Field(description="The job's timeout now.")
    suggested_seconds: int = Field(description="The p99 times 3, rounded up to a whole second (5 s at least).")
    reason: str


def timeout_advice(timeout_seconds: int, view: ForecastView | None) -> TimeoutAdvice | None:
    """Advice on a job's timeout from its forecast; None: no forecast yet, or the timeout is fine."""
    if view is None:
        return None
    suggested = max(MIN_SUGGESTED_TIMEOUT_SECONDS, math.ceil(view.p99_ms * TIMEOUT_SUGGESTED_FACTOR / 1000))
    timeout_ms = timeout_seconds * 1000
    if timeout_ms < view.p95_ms:
        share = "more than 1 run in 20 would be stopped by it"
        return TimeoutAdvice(
            verdict=TimeoutVerdict.TOO_SHORT,
            timeout_seconds=timeout_seconds,
            suggested_seconds=max(suggested, timeout_seconds + 1),
            reason=f"the timeout ({timeout_seconds} s) is under the p95 ({view.p95_ms} ms): {share}",
        )
    if timeout_ms > view.p99_ms * TIMEOUT_HIGH_FACTOR and suggested < timeout_seconds:
        return TimeoutAdvice(
            verdict=TimeoutVerdict.TOO_LONG,
            timeout_seconds=timeout_seconds,
            suggested_seconds=suggested,
            reason=f"the timeout ({timeout_seconds} s) is over {TIMEOUT_HIGH_FACTOR} times the p99 "
            f"({view.p99_ms} ms): a hung run holds its slot that long before it is stopped",
        )
    return None


class NextRunForecast(BaseModel):
    """What a job's answer shows of its next run."""

    model_config = ConfigDict(frozen=True)

    scheduled_for: UtcDatetime
    expected_end_at: UtcDatetime = Field(description="Its scheduled time plus the job's p50.")
    p_success: float = Field(ge=0, le=1)
    deadline_at_risk: bool = Field(description="Its scheduled time plus the job's p95 passes its deadline.")


class JobForecast(BaseModel):
    """A job's forecast as its answer shows it (null until the job has MIN_RUNS runs)."""

    model_config = ConfigDict(frozen=True)

    p50_ms: int
    p95_ms: int
    p99_ms: int
    p_success: float = Field(ge=0, le=1)
    runs: int
    next_run: NextRunForecast | None = None
    timeout_advice: TimeoutAdvice | None = None


def job_forecast(
    view: ForecastView | None, *, next_run_at: datetime | None, deadline_seconds: int | None, timeout_seconds: int
) -> JobForecast | None:
    """What a job's answer shows: its forecast, its next run's, and advice on its timeout."""
    if view is None:
        return None
    next_run = None
    if next_run_at is not None:
        deadline_at = next_run_at + timedelta(seconds=deadline_seconds) if deadline_seconds is not None else None
        seen = outlook(view, start=next_run_at, deadline_at=deadline_at)
        assert seen is not None
        next_run = NextRunForecast(
            scheduled_for=next_run_at,
            expected_end_at=seen.expected_end_at,
            p_success=seen.p_success,
            deadline_at_risk=seen.deadline_at_risk,
        )
    return JobForecast(**view.model_dump(), next_run=next_run, timeout_advice=timeout_advice(timeout_seconds, view))
