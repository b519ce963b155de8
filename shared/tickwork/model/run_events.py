"""Run events on EventBridge (docs/operations.md, "Run events"): their detail schemas, and the id that names each
fact. Their kinds, and which of them a job emits, are tickwork.model.run_event_kinds.

Events are at least once: a fact's writer publishes after the fact's conditional write, and were it to die
before the publish went out, the tick publishes the fact again from what the write left (an outbox: the item stays
in the due index with `events_pending` until published). A consumer deduplicates by the detail's `event_id`,
which is derived from the fact (a run's id, its requeues and the fact's name), never random: every publish of
one fact carries the same id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from tickwork.model.clock import iso
from tickwork.model.run_event_kinds import FAILURE_KINDS, RunEventKind

if TYPE_CHECKING:
    from tickwork.model.run import Run

EVENT_SOURCE = "tickwork"


class RunEvent(BaseModel):
    """One event as published: its kind (detail-type), its time, and its detail (which carries `event_id`)."""

    model_config = ConfigDict(frozen=True)

    kind: RunEventKind
    time: datetime
    detail: dict[str, Any]

    @property
    def event_id(self) -> str:
        return str(self.detail["event_id"])


def event_id(subject: str, kind: RunEventKind, *, round_: int | str = 0) -> str:
    """The id of one fact: its subject (a run id, a job id, a freeze id), the fact's kind, and which round of it
    (a run requeued after FAILED may fail again: a new fact)."""
    return f"{subject}#{kind.value.lower().replace(' ', '-')}#{round_}"


@dataclass(frozen=True)
class RunSubject:
    """The run a run event is about: what every run event's detail names, and the round its id counts."""

    run_id: str
    job_id: str
    tenant: str
    scheduled_for: datetime
    requeues: int = 0
    workflow_run_id: str | None = None
    step_id: str | None = None

    @classmethod
    def of_run(cls, run: Run) -> RunSubject:
        return cls(
            run_id=run.id,
            job_id=run.job_id,
            tenant=run.tenant,
            scheduled_for=run.scheduled_for,
            requeues=run.requeues,
            workflow_run_id=run.workflow_run_id,
            step_id=run.step_id,
        )

    def event_id(self, kind: RunEventKind) -> str:
        return event_id(self.run_id, kind, round_=self.requeues)

    def detail(self, **fields: Any) -> dict[str, Any]:
        """The detail's common fields, then `fields`; a workflow step's run names its workflow run and step."""
        body: dict[str, Any] = {
            "run_id": self.run_id,
            "job_id": self.job_id,
            "tenant": self.tenant,
            "scheduled_for": iso(self.scheduled_for),
            **fields,
        }
        if self.workflow_run_id is not None:
            body.update(workflow_run_id=self.workflow_run_id, step_id=self.step_id)
        return body


def run_failed_events(
    kinds: Sequence[str],
    subject: RunSubject,
    *,
    attempts: int,
    error: dict[str, Any] | None,
    failed_at: datetime,
    band: str,
) -> list[RunEvent]:
    """`Run Failed` and `Run Dead-Lettered` of a run with no attempts left (those of `kinds`)."""
    base = subject.detail(attempts=attempts, error=error, failed_at=iso(failed_at))
    events = []
    for value in kinds:
        kind = RunEventKind(value)
        if kind not in FAILURE_KINDS:
            continue
        detail = {"event_id": subject.event_id(kind), **base}
        if kind is RunEventKind.RUN_DEAD_LETTERED:
            detail["band"] = band
        events.append(RunEvent(kind=kind, time=failed_at, detail=detail))
    return events


def job_suspended_event(
    *, job_id: str, tenant: str, suspended_at: datetime, reason: str | None, opens_until: datetime | None
) -> RunEvent:
    """A job's circuit breaker opened (one event per opening: its id names the instant it opened)."""
    detail = {
        "event_id": event_id(job_id, RunEventKind.JOB_SUSPENDED, round_=int(suspended_at.timestamp() * 1000)),
        "job_id": job_id,
        "tenant": tenant,
        "suspended_at": iso(suspended_at),
        "reason": reason,
        "probe_after": iso(opens_until),
    }
    return RunEvent(kind=RunEventKind.JOB_SUSPENDED, time=suspended_at, detail=detail)


def freeze_event(
    kind: RunEventKind, *, freeze_id: str, tenant: str | None, at: datetime, detail: dict[str, Any]
) -> RunEvent:
    """`Freeze Started` or `Freeze Ended` (for the freezes' writer): one per freeze and kind."""
    if kind not in (RunEventKind.FREEZE_STARTED, RunEventKind.FREEZE_ENDED):
        raise ValueError(f"not a freeze event: {kind.value}")
    body = {"event_id": event_id(freeze_id, kind), "freeze_id": freeze_id, "tenant": tenant, "at": iso(at), **detail}
    return RunEvent(kind=kind, time=at, detail=body)


def deadline_missed_event(
    subject: RunSubject, *, deadline_at: datetime, missed_at: datetime, status: str, on_miss: str
) -> RunEvent:
    """A run had not ended by its deadline (or ended after it): one per run and round. A workflow step's names
    its workflow run and step, as its failure's does."""
    detail = {
        "event_id": subject.event_id(RunEventKind.DEADLINE_MISSED),
        **subject.detail(deadline_at=iso(deadline_at), missed_at=iso(missed_at), status=status, on_miss=on_miss),
    }
    return RunEvent(kind=RunEventKind.DEADLINE_MISSED, time=missed_at, detail=detail)


def variant_rolled_back_event(
    *, job_id: str, tenant: str, variant: str, reason: str, by: str, at: datetime
) -> RunEvent:
    """A job's variant was rolled back (by its guard, or by hand): one per rollback (its id names the instant)."""
    detail = {
        "event_id": event_id(
            job_id, RunEventKind.VARIANT_ROLLED_BACK, round_=f"{variant}#{int(at.timestamp() * 1000)}"
        ),
        "job_id": job_id,
        "tenant": tenant,
        "variant": variant,
        "reason": reason,
        "by": by,
        "rolled_back_at": iso(at),
    }
    return RunEvent(kind=RunEventKind.VARIANT_ROLLED_BACK, time=at, detail=detail)


def deadline_at_risk_event(run: Run, *, at: datetime) -> RunEvent:
    """A run's start plus its job's p95 passes its deadline (docs/forecasts.md): a warning, one per run and round.
    `run` has its deadline and the forecast it was claimed with."""
    subject = RunSubject.of_run(run)
    detail = {
        "event_id": subject.event_id(RunEventKind.DEADLINE_AT_RISK),
        **subject.detail(
            deadline_at=iso(run.deadline_at),
            expected_end_at=iso(run.expected_end_at),
            p95_ms=run.forecast_p95_ms,
            started_at=iso(run.started_at),
            found_at=iso(at),
        ),
    }
    return RunEvent(kind=RunEventKind.DEADLINE_AT_RISK, time=at, detail=detail)


def run_slow_event(subject: RunSubject, *, ran_ms: int, p99_ms: int, factor: float, at: datetime) -> RunEvent:
    """A run's handler ran past its job's p99 times `factor` (docs/forecasts.md): one per run and round."""
    detail = {
        "event_id": subject.event_id(RunEventKind.RUN_SLOW),
        **subject.detail(ran_ms=ran_ms, p99_ms=p99_ms, factor=factor, found_at=iso(at)),
    }
    return RunEvent(kind=RunEventKind.RUN_SLOW, time=at, detail=detail)
