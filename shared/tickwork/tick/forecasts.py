"""The claim's part in a job's forecast (docs/forecasts.md): folding the job's runs that ended since its last claim
into the forecasts its advance writes anyway (no write more: one Query of the job's runs), and warning of the runs
it queued whose start plus the job's p95 passes their deadline (`Deadline At Risk`: the mark rides on the run's own
put; the metric and the event follow it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.forecasts import JobForecasts
from tickwork.model.ids import ItemKind
from tickwork.model.run import Run
from tickwork.model.run_event_kinds import DEADLINE_NOTIFY, RunEventKind, emitted
from tickwork.model.run_events import deadline_at_risk_event
from tickwork.observability import logger, metrics
from tickwork.progress.run_events import RunEvents
from tickwork.store.ended_runs import EndedRuns

DEADLINE_AT_RISK_METRIC = "DeadlineAtRisk"


class ForecastFold:
    def __init__(self, ended: EndedRuns) -> None:
        self.ended = ended

    def folded(self, job: ClaimableJob, now: datetime) -> JobForecasts | None:
        """The job's forecasts with its runs ended since the last fold counted in; None: nothing changed (or they
        could not be read: a forecast is never worth failing a claim for, and the next claim reads them). A job's
        first claim has nothing of its own to fold (its runs come from its claims), so it reads nothing."""
        if job.kind is not ItemKind.JOB or job.version <= 1:
            return None
        current = job.forecasts or JobForecasts()
        try:
            runs = self.ended.since(job.job_id, current.through, now)
        except Exception:
            logger.exception(
                "could not read the job's ended runs; its next claim folds them", extra={"job_id": job.job_id}
            )
            return None
        folded = current.fold(runs)
        return None if folded is current else folded


def warn_at_risk(job: ClaimableJob, created: Iterable[Run], events: RunEvents | None, now: datetime) -> int:
    """The runs a claim created marked at risk of their deadline: counted, logged and published (if the job's
    notify asks: a job with a deadline does unless it leaves them out). Published once, at the claim that created
    the run; the mark on the run is the record, the event a warning that a failed publish does not retry."""
    risky = [r for r in created if r.deadline_at_risk_at is not None and r.deadline_at is not None]
    if not risky:
        return 0
    metrics.add_metric(name=DEADLINE_AT_RISK_METRIC, unit="Count", value=len(risky))
    for run in risky:
        logger.warning(
            "run at risk of its deadline: its start plus its job's p95 passes it",
            extra={"run_id": run.id, "deadline_at": run.deadline_at, "expected_end_at": run.expected_end_at},
        )
    notify = list(job.notify) if job.notify is not None else DEADLINE_NOTIFY
    if events is not None and emitted(notify, (RunEventKind.DEADLINE_AT_RISK,)):
        events.publish([deadline_at_risk_event(run, at=run.deadline_at_risk_at or now) for run in risky])
    return len(risky)
