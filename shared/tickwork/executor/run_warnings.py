"""A running run's warnings from its job's forecast (docs/forecasts.md), each marked on the run once by a write that
happens anyway, then counted, logged and published (if its job's notify asks):

- `Run Slow`: its handler ran past the p99 it was claimed with times the slow factor. Found at a heartbeat (the
  lease extension marks `slow_at`) or at its outcome (the outcome's write marks it), whichever comes first.
- `Deadline At Risk`, found again while it runs: its real start (a late one) plus the p95 passes its deadline, which
  its scheduled start did not (the claim found that one). Found at a heartbeat, marked by the lease extension.

A warning changes nothing of the run. Its event is published after the write that marked it, once; were the publish
to fail, the mark is the record (no outbox: a warning is not a fact a consumer must see).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from tickwork.model.forecast_uses import deadline_at_risk, run_slow
from tickwork.model.run import Run
from tickwork.model.run_event_kinds import DEADLINE_NOTIFY, SLOW_NOTIFY, emitted
from tickwork.model.run_events import RunEvent, RunSubject, deadline_at_risk_event, run_slow_event
from tickwork.observability import logger, metrics
from tickwork.progress.run_events import RunEvents

RUN_SLOW_METRIC = "RunsSlow"
DEADLINE_AT_RISK_METRIC = "DeadlineAtRisk"


class SlowRuns:
    """`Run Slow` at a run's outcome."""

    def __init__(self, events: RunEvents | None, factor: float) -> None:
        self.events, self.factor = events, factor

    def found(self, run: Run, ran_ms: int | None, now: datetime) -> datetime | None:
        """When the run is found slow (now), or None: not slow, or marked already, or no forecast to tell."""
        if run.slow_at is not None or ran_ms is None:
            return None
        return now if run_slow(ran_ms=ran_ms, p99_ms=run.forecast_p99_ms, factor=self.factor) else None

    def warn(self, run: Run, ran_ms: int, at: datetime, notify: Sequence[str] | None = None) -> None:
        assert run.forecast_p99_ms is not None  # found() said so
        run.slow_at = at  # this execution's copy: its outcome does not find it again
        metrics.add_metric(name=RUN_SLOW_METRIC, unit="Count", value=1)
        logger.warning(
            "run slow: past its job's p99 times the slow factor",
            extra={"run_id": run.id, "ran_ms": ran_ms, "p99_ms": run.forecast_p99_ms, "factor": self.factor},
        )
        event = run_slow_event(
            RunSubject.of_run(run), ran_ms=ran_ms, p99_ms=run.forecast_p99_ms, factor=self.factor, at=at
        )
        _publish(self.events, notify if notify is not None else SLOW_NOTIFY, event)


class RunWatch:
    """What a heartbeat looks for in the run it holds, from the run as its lease read it (its outlook, its marks)
    and the attempt's start: the marks its lease extension writes, then their warnings."""

    def __init__(self, run: Run, started: datetime, slow: SlowRuns, notify: Sequence[str] | None) -> None:
        self.run, self.started, self.slow, self.notify = run, started, slow, notify

    def marks(self, now: datetime) -> dict[str, datetime]:
        """The marks to write with this beat (none most of the time)."""
        run, found = self.run, {}
        start = run.started_at or self.started
        if run.deadline_at_risk_at is None and deadline_at_risk(
            start=start, p95_ms=run.forecast_p95_ms, deadline_at=run.deadline_at
        ):
            found["deadline_at_risk_at"] = now
        if self.slow.found(run, _ms(now - self.started), now) is not None:
            found["slow_at"] = now
        return found

    def marked(self, marks: dict[str, datetime]) -> None:
        """The beat that wrote `marks` held the lease: their warnings."""
        if "slow_at" in marks:
            self.slow.warn(self.run, _ms(marks["slow_at"] - self.started), marks["slow_at"], self.notify)
        at = marks.get("deadline_at_risk_at")
        if at is not None:
            self.run.deadline_at_risk_at = at
            metrics.add_metric(name=DEADLINE_AT_RISK_METRIC, unit="Count", value=1)
            logger.warning(
                "run at risk of its deadline: its start plus its job's p95 passes it",
                extra={"run_id": self.run.id, "started_at": self.run.started_at, "deadline_at": self.run.deadline_at},
            )
            wanted = self.notify if self.notify is not None else DEADLINE_NOTIFY
            _publish(self.slow.events, wanted, deadline_at_risk_event(self.run, at=at))


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def _publish(events: RunEvents | None, notify: Sequence[str], event: RunEvent) -> None:
    if events is not None and emitted(notify, (event.kind,)):
        events.publish([event])
