"""RegionMode eventual's fencing (docs/regions.md), against moto: only the active region claims (its tick, and its API
at a job's create) and leases; a failover during a tick stops its claims and sends; an executor fenced by a failover
while its handler ran does not record the outcome, and the new active region runs the run again: one of the runs a
forced failover reports.

One moto table plays the global table with replication caught up (the failover's item seen at once in every region):
this pipeline's region is the table client's (us-east-1); "the other region" is the same pipeline with its fence
naming us-east-2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import moto.sqs.models
import pytest
from pydantic import BaseModel, ConfigDict
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.policies import Band
from tickwork.model.regions import FailoverPlan, RegionMode, SeenRun, plan_failover, possibly_twice
from tickwork.model.states import RunStatus

from tests.harness import START, Pipeline

HERE, THERE = "us-east-1", "us-east-2"
REGIONS = (HERE, THERE)
DUE = START + timedelta(minutes=4)  # past the horizon when created: the tick claims it, not job creation
EFFECTS: list[tuple[str, int]] = []  # (run id, attempt) of every handler that ran
WHILE_RUNNING: list[Callable[[], None]] = []  # what happens while the next handler runs (a failover)


class _Payload(BaseModel):
    model_config = ConfigDict(extra="allow")


if "region-drill" not in registry:

    @job_type("region-drill", _Payload)
    def _drill(payload: _Payload, ctx: RunContext) -> dict[str, Any]:
        EFFECTS.append((ctx.run_id, ctx.attempt))
        while WHILE_RUNNING:
            WHILE_RUNNING.pop()()
        return {"run_id": ctx.run_id}


@pytest.fixture
def eventual(mocked_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    EFFECTS.clear()
    WHILE_RUNNING.clear()
    with Pipeline.create(REGION_MODE="eventual", CLAIM_THREADS="1") as pipeline:
        monkeypatch.setattr(moto.sqs.models, "unix_time", lambda *_: pipeline.clock.now().timestamp())
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *_: pipeline.clock.now().timestamp() * 1000)
        assert pipeline.services.region_fence.region == HERE
        yield pipeline


def _fail_over(pipeline: Pipeline, to: str, *, force: bool = False, caught_up: bool = True) -> FailoverPlan:
    regions = pipeline.services.store.regions
    plan = plan_failover(
        RegionMode.EVENTUAL, regions.roles(), to, REGIONS, caught_up=caught_up, force=force, now=pipeline.clock.now()
    )
    assert isinstance(plan, FailoverPlan)
    assert regions.fail_over(plan)
    if plan.handover:  # replication caught up at once: complete it
        return _fail_over(pipeline, to, force=force, caught_up=caught_up)
    return plan


def _in_region(pipeline: Pipeline, region: str) -> None:
    """The same stack in another region: its functions' fence names that region."""
    pipeline.services.region_fence.region = region


def _deliver_all(pipeline: Pipeline) -> int:
    delivered = 0
    while messages := pipeline.receive(Band.NORMAL):
        pipeline.deliver(Band.NORMAL, messages)
        delivered += len(messages)
    return delivered


def _create(pipeline: Pipeline, count: int = 1) -> list[str]:
    jobs = [pipeline.create_job(type="region-drill", schedule={"at": DUE}) for _ in range(count)]
    return [job.id for job in jobs]


def test_no_region_claims_until_one_is_made_active_and_then_only_it(eventual):
    (job_id,) = _create(eventual)
    eventual.clock.advance(180)
    assert eventual.tick()["dispatched"] == 0  # no region active yet
    _fail_over(eventual, THERE)
    assert eventual.tick()["dispatched"] == 0  # this region is not the active one
    assert eventual.runs_of(job_id) == []
    _in_region(eventual, THERE)
    assert eventual.tick()["dispatched"] == 1
    assert [r.status for r in eventual.runs_of(job_id)] == [RunStatus.QUEUED]


def test_an_executor_of_a_fenced_region_neither_leases_nor_runs(eventual):
    _fail_over(eventual, HERE)
    (job_id,) = _create(eventual)
    eventual.clock.advance(180)
    eventual.tick()
    _fail_over(eventual, THERE)  # after the send, before any delivery
    eventual.clock.advance(60)
    assert _deliver_all(eventual) == 1
    (run,) = eventual.runs_of(job_id)
    assert run.status is RunStatus.QUEUED
    assert run.attempts == 0
    assert EFFECTS == []


def test_an_executor_fenced_while_running_records_no_outcome_and_the_active_region_runs_it_once_more(eventual):
    """A forced failover while the handler runs: the effect happened once in the old region; that executor, waking
    to record it, is fenced (no outcome, no result); the run is in the forced failover's report, and the new active
    region runs it again when the lease lapses: exactly the reported runs run twice, nothing else."""
    _fail_over(eventual, HERE)
    (job_id,) = _create(eventual)
    eventual.clock.advance(180)
    eventual.tick()
    eventual.clock.advance(60)
    forced: list[FailoverPlan] = []
    WHILE_RUNNING.append(lambda: forced.append(_fail_over(eventual, THERE, force=True, caught_up=False)))
    assert _deliver_all(eventual) == 1
    (run,) = eventual.runs_of(job_id)
    assert run.status is RunStatus.RUNNING  # no outcome recorded by the fenced executor
    assert run.finished_at is None
    assert eventual.result_objects() == []  # nor its result
    (plan,) = forced
    report = possibly_twice(plan, [SeenRun(r.id, r.status) for r in eventual.runs_of(job_id)])
    assert report == [run.id]

    _in_region(eventual, THERE)
    eventual.clock.advance(eventual.services.settings.lease_seconds + 60)
    eventual.tick()  # the new active region re-sends the run whose lease lapsed
    assert _deliver_all(eventual) == 1
    (run,) = eventual.runs_of(job_id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempts == 2
    assert [(run.id, 1), (run.id, 2)] == EFFECTS
    ran_twice = {run_id for run_id, _ in EFFECTS if [r for r, _ in EFFECTS].count(run_id) > 1}
    assert ran_twice == set(report)


def test_a_failover_during_a_tick_stops_its_claims_and_sends_and_the_new_region_claims_the_rest_once(
    eventual, monkeypatch
):
    _fail_over(eventual, HERE)
    job_ids = _create(eventual, 25)  # three slices of ten (CLAIM_THREADS 1)
    eventual.clock.advance(180)
    dispatcher = eventual.services.dispatcher
    send = dispatcher._send
    slices_sent: list[int] = []

    def send_then_fail_over(outgoing: list[Any], report: Any) -> None:
        send(outgoing, report)
        slices_sent.append(len(outgoing))
        if len(slices_sent) == 1:
            _fail_over(eventual, THERE)

    monkeypatch.setattr(dispatcher, "_send", send_then_fail_over)
    eventual.tick()
    assert slices_sent == [10]  # the first slice, then fenced
    claimed = [r for job_id in job_ids for r in eventual.runs_of(job_id)]
    assert len(claimed) == 10

    _in_region(eventual, THERE)
    eventual.tick()
    eventual.clock.advance(60)
    _deliver_all(eventual)
    eventual.tick()
    _deliver_all(eventual)
    runs = [r for job_id in job_ids for r in eventual.runs_of(job_id)]
    assert len(runs) == 25
    assert all(r.status is RunStatus.SUCCEEDED and r.attempts == 1 for r in runs)
    assert sorted(run_id for run_id, _ in EFFECTS) == sorted(r.id for r in runs)  # each ran once


SOON = START + timedelta(seconds=30)  # within the horizon when created: job creation claims it (where it may)


def test_a_passive_regions_api_does_not_claim_a_job_due_soon_and_the_active_regions_tick_does(eventual):
    _fail_over(eventual, HERE)
    _in_region(eventual, THERE)  # the job is created through the passive region's API
    job = eventual.create_job(type="region-drill", schedule={"at": SOON})
    assert eventual.runs_of(job.id) == []
    assert eventual.receive(Band.NORMAL) == []  # nothing sent to the passive region's queue either
    _in_region(eventual, HERE)
    assert eventual.tick()["dispatched"] == 1
    assert [r.status for r in eventual.runs_of(job.id)] == [RunStatus.QUEUED]


def test_during_a_handover_no_regions_api_claims_at_create(eventual):
    _fail_over(eventual, HERE)
    regions = eventual.services.store.regions
    handover = plan_failover(
        RegionMode.EVENTUAL, regions.roles(), THERE, REGIONS, caught_up=None, force=False, now=eventual.clock.now()
    )
    assert isinstance(handover, FailoverPlan)
    assert regions.fail_over(handover)
    for region in REGIONS:
        _in_region(eventual, region)
        job = eventual.create_job(type="region-drill", schedule={"at": SOON})
        assert eventual.runs_of(job.id) == []
        assert eventual.tick()["dispatched"] == 0


def test_the_active_regions_api_claims_a_job_due_soon_at_create(eventual):
    _fail_over(eventual, HERE)
    job = eventual.create_job(type="region-drill", schedule={"at": SOON})
    assert [r.status for r in eventual.runs_of(job.id)] == [RunStatus.QUEUED]


@pytest.mark.parametrize("mode", ["single", "strong"])
def test_where_every_region_works_any_regions_api_claims_at_create(mocked_aws: None, mode: str) -> None:
    with Pipeline.create(REGION_MODE=mode, GLOBAL_TABLE_REGIONS=",".join(REGIONS)) as pipeline:
        _in_region(pipeline, THERE)
        job = pipeline.create_job(type="region-drill", schedule={"at": SOON})
        assert [r.status for r in pipeline.runs_of(job.id)] == [RunStatus.QUEUED]
        assert not [c for c in pipeline.calls.params("GetItem") if c["Key"]["pk"]["S"] == "REGIONS"]  # none read
