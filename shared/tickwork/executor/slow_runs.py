"""`Run Slow` (docs/forecasts.md): a run whose handler ran past its job's p99 (as the run was claimed with it) times
the slow factor. Found at its outcome, whose write marks it (`slow_at`, no write more); then counted, logged and
published once (if its job's notify asks: by default it does). A warning: the run's outcome is what it is."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tickwork.model.forecast_uses import run_slow
from tickwork.model.run import Run
from tickwork.model.run_event_kinds import SLOW_NOTIFY, RunEventKind, emitted
from tickwork.model.run_events import RunSubject, run_slow_event
from tickwork.observability import logger, metrics
from tickwork.progress.run_events import RunEvents

RUN_SLOW_METRIC = "RunsSlow"


class SlowRuns:
    def __init__(self, events: RunEvents | None, factor: float) -> None:
        self.events, self.factor = events, factor

    def found(self, run: Run, ran_ms: int | None, now: datetime) -> datetime | None:
        """When the run is found slow (now), or None: not slow, or marked already, or no forecast to tell."""
        if run.slow_at is not None or ran_ms is None:
            return None
        return now if run_slow(ran_ms=ran_ms, p99_ms=run.forecast_p99_ms, factor=self.factor) else None

    def warn(self, run: Run, ran_ms: int, at: datetime, notify: Sequence[str] | None = None) -> None:
        assert run.forecast_p99_ms is not None  # found() said so
        metrics.add_metric(name=RUN_SLOW_METRIC, unit="Count", value=1)
        logger.warning(
            "run slow: past its job's p99 times the slow factor",
            extra={"run_id": run.id, "ran_ms": ran_ms, "p99_ms": run.forecast_p99_ms, "factor": self.factor},
        )
        wanted = notify if notify is not None else SLOW_NOTIFY
        if self.events is not None and emitted(wanted, (RunEventKind.RUN_SLOW,)):
            event = run_slow_event(
                RunSubject.of_run(run), ran_ms=ran_ms, p99_ms=run.forecast_p99_ms, factor=self.factor, at=at
            )
            self.events.publish([event])
