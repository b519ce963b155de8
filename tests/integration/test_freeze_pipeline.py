"""Freezes through the tick (moto, fake clock): SKIP records every occurrence inside it SKIPPED `freeze`, none
ahead of its time, so lifting it early lets the rest run; DEFER collapses each job's blocked occurrences by its
catch-up policy at the freeze's end (no burst); an admin's freeze covers every tenant, a tenant's only its own."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from tickwork.control.callers import Caller
from tickwork.model.errors import Forbidden
from tickwork.model.freezes import FreezeSpec
from tickwork.model.states import DeferReason, RunStatus, SkipReason

from tests.harness import START, TENANT

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
MINUTE = timedelta(minutes=1)
PAYMENTS = {"team": "payments"}


def _at(minute: int) -> datetime:
    return START + minute * MINUTE


def _freeze(pipeline: Any, caller: Caller = Caller(TENANT), **spec: Any) -> Any:
    body = {"selector": {"tags": PAYMENTS}, "for_seconds": 600, "reason": "deploy 1.42", **spec}
    return pipeline.services.freezes.create(caller, FreezeSpec.model_validate(body))


def _tick_through(pipeline: Any, minutes: int) -> None:
    for _ in range(minutes):
        pipeline.clock.advance(60)
        pipeline.tick()
        pipeline.drain()


def _by_occurrence(pipeline: Any, job_id: str) -> dict[datetime, Any]:
    return {r.occurrence_at: r for r in pipeline.runs_of(job_id)}


def test_skip_records_each_occurrence_inside_it_and_a_lift_lets_the_rest_run(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, tags=PAYMENTS)  # claims 12:01, 12:02
    other = pipeline.create_job(schedule={"cron": "* * * * *"}, tags={"team": "search"})
    freeze = _freeze(pipeline, **{"from": _at(1).isoformat()})
    _tick_through(pipeline, 4)
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)  # at 12:04
    _tick_through(pipeline, 3)
    pipeline.drain()
    runs = _by_occurrence(pipeline, job.id)
    inside = [(runs[_at(m)].status, runs[_at(m)].skip_reason, runs[_at(m)].blocked_by) for m in range(1, 5)]
    assert inside == [(RunStatus.SKIPPED, SkipReason.FREEZE, freeze.id)] * 4  # 12:01, 12:02 claimed before it
    assert [runs[_at(m)].status for m in range(5, 8)] == [RunStatus.SUCCEEDED] * 3  # after the lift, none lost
    assert all(r.skip_reason is None for r in pipeline.runs_of(other.id))  # not selected


@pytest.mark.parametrize(("catchup", "runs_at_end"), [("LATEST", [9]), ("NONE", []), ("ALL", list(range(1, 10)))])
def test_defer_collapses_each_job_s_blocked_runs_by_its_catch_up_at_the_freeze_s_end(
    timed_pipeline, catchup, runs_at_end
):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, tags=PAYMENTS, catchup=catchup)  # claims 12:01, 12:02
    freeze = _freeze(pipeline, on_blocked="DEFER")  # 12:00 to 12:10
    for _ in range(12):
        pipeline.clock.advance(60)
        pipeline.tick()
        pipeline.drain()
    runs = _by_occurrence(pipeline, job.id)
    assert sorted(runs)[:12] == [_at(m) for m in range(1, 13)]  # every occurrence has its record: none lost
    ran = [m for m in range(1, 10) if runs[_at(m)].status is RunStatus.SUCCEEDED]
    assert ran == runs_at_end
    for m in ran:  # at the freeze's end, not before
        assert runs[_at(m)].started_at >= _at(10)
        assert (runs[_at(m)].deferred_reason, runs[_at(m)].blocked_by) == (DeferReason.FREEZE, freeze.id)
    skipped = {(runs[_at(m)].status, runs[_at(m)].skip_reason) for m in range(1, 10) if m not in ran}
    assert skipped <= {(RunStatus.SKIPPED, SkipReason.FREEZE)}
    assert runs[_at(10)].status is RunStatus.SUCCEEDED
    assert runs[_at(10)].nominal_at is None


def test_an_admin_s_freeze_covers_every_tenant_and_a_tenant_s_only_its_own(pipeline):
    acme = pipeline.create_job("acme", schedule={"cron": "* * * * *"}, tags=PAYMENTS)
    globex = pipeline.create_job("globex", schedule={"cron": "* * * * *"}, tags=PAYMENTS)
    with pytest.raises(Forbidden):
        _freeze(pipeline, Caller("acme"), every_tenant=True)
    _freeze(pipeline, Caller("acme"), **{"from": _at(3).isoformat(), "for_seconds": 120})
    _freeze(pipeline, Caller("ops", admin=True), every_tenant=True, **{"from": _at(6).isoformat(), "for_seconds": 120})
    _tick_through(pipeline, 9)

    def frozen(job_id: str) -> list[int]:
        runs = _by_occurrence(pipeline, job_id)
        return [m for m in range(1, 10) if runs[_at(m)].skip_reason is SkipReason.FREEZE]

    assert frozen(acme.id) == [3, 4, 6, 7]
    assert frozen(globex.id) == [6, 7]
