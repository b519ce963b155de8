"""Freezes through the tick (moto, fake clock): SKIP records every occurrence inside it SKIPPED `freeze`, none
ahead of its time, so lifting it early lets the rest run; DEFER collapses each job's blocked occurrences by its
catch-up policy at the freeze's end (no burst); an admin's freeze covers every tenant, a tenant's only its own."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from types import SimpleNamespace
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


class _FreezeCreatedRightAfterTheRead:
    """The tick's freezes (tickwork.tick.blockers.FreezeReads.records) as a tick racing a freeze's creation sees
    them: it reads none, and the freeze is created (its marking finding nothing claimed yet) before the tick writes
    and sends its claim."""

    def __init__(self, records: Any, create: Any) -> None:
        self.records, self.create = records, create
        self.created: Any = None

    def all_stored(self) -> list[Any]:
        found = self.records.all_stored()
        if self.created is None:
            self.created = self.create()
        return found


def _race_a_freeze_with_a_tick(pipeline: Any, monkeypatch: Any, **spec: Any) -> tuple[Any, Any]:
    """A job due at 12:05, claimed by the 12:04 tick while a freeze from 12:04 is created between the tick's read of
    the freezes and its claim's write; the freeze is over the job."""
    job = pipeline.create_job(schedule={"cron": "*/5 * * * *"}, tags=PAYMENTS, **spec.pop("job", {}))
    reads = pipeline.services.dispatcher.freezes
    racing = _FreezeCreatedRightAfterTheRead(reads.records, lambda: _freeze(pipeline, **spec))
    monkeypatch.setattr(reads, "records", racing)
    pipeline.clock.advance(4 * 60)
    pipeline.tick()  # claims 12:05, sent to start at its time
    monkeypatch.setattr(reads, "records", racing.records)
    assert racing.created is not None
    assert pipeline.run(pipeline.runs_of(job.id)[0].id).blocked_by is None  # the creation's marking missed it
    return job, racing.created


def test_a_run_claimed_by_a_tick_racing_a_freeze_s_creation_is_skipped_at_its_start(timed_pipeline, monkeypatch):
    pipeline = timed_pipeline
    job, freeze = _race_a_freeze_with_a_tick(pipeline, monkeypatch)
    pipeline.clock.advance(60)  # 12:05
    pipeline.drain()
    run = _by_occurrence(pipeline, job.id)[_at(5)]
    assert (run.status, run.skip_reason, run.blocked_by) == (RunStatus.SKIPPED, SkipReason.FREEZE, freeze.id)
    assert run.started_at is None


def test_a_run_claimed_by_a_tick_racing_a_defer_freeze_s_creation_runs_at_its_end(timed_pipeline, monkeypatch):
    pipeline = timed_pipeline
    # 12:04 to 12:08: the run at 12:05 is the job's last occurrence inside it, kept by LATEST.
    job, freeze = _race_a_freeze_with_a_tick(pipeline, monkeypatch, on_blocked="DEFER", for_seconds=240)
    pipeline.clock.advance(60)  # 12:05
    pipeline.drain()
    assert pipeline.run(pipeline.runs_of(job.id)[0].id).status is RunStatus.QUEUED  # waiting for its end
    pipeline.clock.advance(3 * 60)  # 12:08
    pipeline.drain()
    run = _by_occurrence(pipeline, job.id)[_at(5)]
    assert run.status is RunStatus.SUCCEEDED
    assert run.started_at >= _at(8)
    assert (run.deferred_reason, run.blocked_by) == (DeferReason.FREEZE, freeze.id)


def test_a_run_claimed_by_a_tick_racing_a_defer_freeze_is_skipped_when_a_later_one_inside_it_is_kept(
    timed_pipeline, monkeypatch
):
    pipeline = timed_pipeline
    job, freeze = _race_a_freeze_with_a_tick(pipeline, monkeypatch, on_blocked="DEFER")  # 12:04 to 12:14
    _tick_through(pipeline, 11)  # to 12:15
    runs = _by_occurrence(pipeline, job.id)
    assert (runs[_at(5)].status, runs[_at(5)].skip_reason, runs[_at(5)].blocked_by) == (
        RunStatus.SKIPPED,
        SkipReason.FREEZE,
        freeze.id,
    )
    assert runs[_at(10)].status is RunStatus.SUCCEEDED  # the latest inside it, at its end
    assert runs[_at(10)].started_at >= _at(14)


def test_a_claimed_run_the_due_index_did_not_show_to_a_freeze_s_creation_is_skipped_at_its_start(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, tags=PAYMENTS)  # claims 12:01, 12:02
    store = pipeline.services.store
    # The due index (a GSI, eventually consistent) not showing the claimed runs yet: the marking finds none.
    lagging = SimpleNamespace(
        shards=store.shards, shared_table=store.shared_table, due=SimpleNamespace(query_due=lambda *_, **__: [])
    )
    freeze = replace(pipeline.services.freezes, store=lagging).create(
        Caller(TENANT),
        FreezeSpec.model_validate({"selector": {"tags": PAYMENTS}, "for_seconds": 600, "reason": "deploy 1.42"}),
    )
    assert all(r.blocked_by is None for r in pipeline.runs_of(job.id))
    pipeline.clock.advance(2 * 60)
    pipeline.drain()
    runs = _by_occurrence(pipeline, job.id)
    assert [(runs[_at(m)].status, runs[_at(m)].blocked_by) for m in (1, 2)] == [(RunStatus.SKIPPED, freeze.id)] * 2
