"""The claim's part in a job's forecast (tickwork.tick.forecasts), from values: when it reads the job's ended runs,
what a failed read does (nothing: the claim goes on, the next claim folds), and which runs it warns of; and a stored
forecast that does not read (tickwork.store.codec.stored_forecasts)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.forecasts import EndedRun, JobForecasts
from tickwork.model.ids import ItemKind, run_id_for
from tickwork.model.run import Run
from tickwork.model.run_events import RunEvent
from tickwork.model.schedule import Schedule
from tickwork.model.states import RunStatus
from tickwork.store.codec import stored_forecasts
from tickwork.tick.forecasts import ForecastFold, warn_at_risk

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
JOB = ClaimableJob(
    job_id="j" + "0" * 25,
    tenant="acme",
    priority=5,
    schedule=Schedule.model_validate({"rate": "1 minute"}),
    version=2,
    next_run_at=NOW,
    created_at=NOW - timedelta(hours=1),
    misfire_grace=timedelta(minutes=5),
)


class EndedRunsRead:
    """What the store's EndedRuns answers, as given (or the error it raises)."""

    def __init__(self, runs: list[EndedRun] | Exception) -> None:
        self.runs, self.asked = runs, 0

    def since(self, job_id: str, through: str, now: datetime) -> list[EndedRun]:
        self.asked += 1
        if isinstance(self.runs, Exception):
            raise self.runs
        return self.runs


class Published:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def publish(self, events: list[RunEvent]) -> bool:
        self.events += events
        return True


def _ended(n: int) -> EndedRun:
    return EndedRun(sort_key=f"RUN#{n:013d}", settled=True, succeeded=True, duration_ms=100)


def test_a_claim_folds_the_ended_runs_read_since_the_cursor() -> None:
    read = EndedRunsRead([_ended(1), _ended(2)])
    folded = ForecastFold(read).folded(JOB, NOW)  # type: ignore[arg-type]
    assert folded is not None
    assert folded.through == "RUN#0000000000002"
    assert folded.variants["baseline"].runs == 2


def test_a_failed_read_folds_nothing_and_fails_no_claim() -> None:
    read = EndedRunsRead(RuntimeError("ProvisionedThroughputExceededException"))
    assert ForecastFold(read).folded(JOB, NOW) is None  # type: ignore[arg-type]
    assert read.asked == 1


def test_a_jobs_first_claim_and_a_workflows_claims_read_nothing() -> None:
    read = EndedRunsRead([_ended(1)])
    fold = ForecastFold(read)  # type: ignore[arg-type]
    assert fold.folded(replace(JOB, version=1), NOW) is None
    assert fold.folded(replace(JOB, kind=ItemKind.WORKFLOW), NOW) is None
    assert read.asked == 0


def test_nothing_new_settled_changes_nothing_and_writes_nothing() -> None:
    read = EndedRunsRead([EndedRun(sort_key="RUN#0000000000003", settled=False)])
    assert ForecastFold(read).folded(replace(JOB, forecasts=JobForecasts()), NOW) is None  # type: ignore[arg-type]


def _run(at_risk: bool, **fields: Any) -> Run:
    at = NOW + timedelta(minutes=1)
    return Run(
        id=run_id_for(JOB.job_id, at),
        job_id=JOB.job_id,
        tenant="acme",
        scheduled_for=at,
        status=RunStatus.QUEUED,
        deadline_at=at + timedelta(seconds=5),
        expected_end_at=at + timedelta(seconds=4),
        p_success=0.9,
        forecast_p95_ms=9_000,
        forecast_p99_ms=12_000,
        deadline_at_risk_at=NOW if at_risk else None,
        **fields,
    )


def test_the_runs_created_at_risk_are_published_once_each() -> None:
    published = Published()
    assert warn_at_risk(JOB, [_run(True), _run(False, priority=4)], published, NOW) == 1  # type: ignore[arg-type]
    (event,) = published.events
    assert event.kind.value == "Deadline At Risk"
    assert event.detail["p95_ms"] == 9_000


def test_a_job_whose_notify_leaves_it_out_publishes_no_warning_but_counts_it() -> None:
    published = Published()
    quiet = replace(JOB, notify=("Run Failed",))
    assert warn_at_risk(quiet, [_run(True)], published, NOW) == 1  # type: ignore[arg-type]
    assert published.events == []


def test_a_stored_forecast_that_does_not_read_reads_as_none() -> None:
    assert stored_forecasts({"forecasts": '{"variants": {"baseline": {"runs": -1}}}'}) is None
    assert stored_forecasts({"forecasts": "not json"}) is None
    assert stored_forecasts({}) is None
    assert stored_forecasts({"forecasts": '{"through": "RUN#1"}'}) == JobForecasts(through="RUN#1")
