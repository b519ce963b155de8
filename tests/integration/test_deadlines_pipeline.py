"""Deadlines (docs/operations.md, "Deadlines") through the real tick and executor: a run records its deadline_at;
a miss is recorded once per run by the tick, even with no executor alive and with ticks racing; ALERT publishes
`Deadline Missed`, CANCEL stops the run (FAILED `deadline`)."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import WorkflowUpdate
from tickwork.model.clock import to_ms
from tickwork.model.ids import ItemKind, run_id_for, step_run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.store import DueItem
from tickwork.store.codec import ROOTS_DEADLINE_SECONDS
from tickwork.store.deadlines import watch_key

from tests.harness import START, TENANT
from tests.integration.test_run_events_pipeline import Consumer
from tests.workflow_runs import HOLD, create, deliver_round, fresh_hold, occur, step, view  # noqa: F401  fresh_hold: autouse

FAR = timedelta(minutes=10)


@pytest.fixture
def consumer(pipeline):
    return Consumer(pipeline.services.clients)


@pytest.fixture
def counted(monkeypatch):
    """The metrics the deadline code adds, by name."""
    from tickwork.executor import outcomes
    from tickwork.tick import deadlines

    names: Counter[str] = Counter()
    values: dict[str, list[float]] = {}

    def record(name: str, value: float = 1, **_: Any) -> None:
        names[name] += 1
        values.setdefault(name, []).append(value)

    monkeypatch.setattr(deadlines.metrics, "add_metric", record)
    monkeypatch.setattr(outcomes.metrics, "add_metric", record)
    return names, values


def _deadline_job(pipeline, *, within: int = 60, on_miss: str = "ALERT", **spec):
    spec.setdefault("payload", {})
    return pipeline.create_job(
        schedule={"at": START + FAR}, deadline={"within_seconds": within, "on_miss": on_miss}, **spec
    )


def racing_ticks(pipeline, count: int = 2) -> None:
    """`count` ticks at once."""
    ticks = [threading.Thread(target=pipeline.tick) for _ in range(count)]
    for tick in ticks:
        tick.start()
    for tick in ticks:
        tick.join()


def _watch(pipeline, run_id: str) -> dict[str, Any] | None:
    item = pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key=watch_key(run_id)
    )
    return item.get("Item")


def test_a_run_records_its_deadline_from_its_occurrence(pipeline):
    job = _deadline_job(pipeline, within=90)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (run,) = pipeline.runs_of(job.id)
    assert run.deadline_at == START + FAR + timedelta(seconds=90)
    watch = _watch(pipeline, run.id)
    assert watch is not None
    assert int(watch["due_at"]["N"]) == to_ms(run.deadline_at)


def test_a_deadline_missed_with_no_executor_alive_is_recorded_once_by_racing_ticks(pipeline, consumer, counted):
    names, _ = counted
    job = _deadline_job(pipeline)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()  # claimed and sent; no executor ever takes it
    (run,) = pipeline.runs_of(job.id)
    pipeline.clock.advance(61)

    # Two ticks at once, and a third that read the watch before they took it: one records the miss.
    racing_ticks(pipeline)
    stale = DueItem(ItemKind.DEADLINE, "0", to_ms(run.deadline_at), {"run_id": run.id})  # type: ignore[arg-type]
    assert pipeline.services.dispatcher.deadlines.check(stale, pipeline.clock.now()) is False

    missed = pipeline.run(run.id)
    assert missed.status is RunStatus.QUEUED
    assert missed.deadline_missed_at == START + FAR + timedelta(seconds=61)
    assert names["DeadlineMissed"] == 1
    events = consumer.events()
    assert [e["detail-type"] for e in events] == ["Deadline Missed"]
    detail = events[0]["detail"]
    assert (detail["event_id"], detail["status"], detail["on_miss"]) == (
        f"{run.id}#deadline-missed#0",
        "QUEUED",
        "ALERT",
    )
    watch = _watch(pipeline, run.id)
    assert watch is not None
    assert "due_at" not in watch  # published: out of the due index

    pipeline.clock.advance(600)
    pipeline.tick()
    assert names["DeadlineMissed"] == 1
    assert len(consumer.events()) == 1


def test_a_miss_whose_event_was_refused_is_published_by_a_later_tick_once(pipeline, consumer, monkeypatch):
    job = _deadline_job(pipeline)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (run,) = pipeline.runs_of(job.id)
    bus = pipeline.services.run_events.bus
    real = bus.publish
    monkeypatch.setattr(bus, "publish", lambda events: False)
    pipeline.clock.advance(61)
    pipeline.tick()
    assert pipeline.run(run.id).deadline_missed_at is not None
    assert consumer.events() == []
    monkeypatch.setattr(bus, "publish", real)
    pipeline.clock.advance(61)
    pipeline.tick()
    pipeline.clock.advance(61)
    pipeline.tick()
    assert [e["detail"]["event_id"] for e in consumer.events()] == [f"{run.id}#deadline-missed#0"]


def test_a_run_that_ends_in_time_records_no_miss_and_its_slack(pipeline, consumer, counted):
    names, values = counted
    job = _deadline_job(pipeline, within=120)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert values["SlackSeconds"] == [120.0]
    pipeline.clock.advance(121)
    pipeline.tick()
    assert pipeline.run(run.id).deadline_missed_at is None
    assert names["DeadlineMissed"] == 0
    assert consumer.events() == []


def test_a_run_that_ended_after_its_deadline_has_its_miss_recorded(pipeline, counted):
    names, values = counted
    job = _deadline_job(pipeline, within=30)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.clock.advance(45)  # the executor came late
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert values["SlackSeconds"] == [-15.0]
    pipeline.tick()
    assert pipeline.run(run.id).deadline_missed_at is not None
    assert names["DeadlineMissed"] == 1


def test_cancel_fails_a_run_past_its_deadline_without_running_it(pipeline):
    job = _deadline_job(pipeline, within=30, on_miss="CANCEL")
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.clock.advance(31)
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "deadline"
    assert run.deadline_missed_at is not None
    assert pipeline.result_objects() == []  # its handler never ran


def test_a_workflow_step_s_deadline_missed_is_recorded_once_by_racing_ticks(pipeline, consumer, counted):
    """A step's run records its deadline from its workflow run's occurrence; no executor takes it: racing ticks
    record the miss once and publish `Deadline Missed` once, naming the step's run."""
    names, _ = counted
    workflow = create(pipeline, [step("a", type="echo", deadline={"within_seconds": 60})])
    occurrence = workflow.next_run_at
    assert occurrence is not None
    workflow_run_id = occur(pipeline, workflow)
    run = pipeline.run(step_run_id_for(workflow_run_id, "a"))
    assert run.deadline_at == occurrence + timedelta(seconds=60)
    pipeline.clock.advance(61)
    racing_ticks(pipeline)
    pipeline.tick()
    assert pipeline.run(run.id).deadline_missed_at == occurrence + timedelta(seconds=61)
    assert names["DeadlineMissed"] == 1
    events = consumer.events()
    assert [(e["detail-type"], e["detail"]["event_id"]) for e in events] == [
        ("Deadline Missed", f"{run.id}#deadline-missed#0")
    ]
    detail = events[0]["detail"]
    assert (detail["job_id"], detail["on_miss"], detail["workflow_run_id"], detail["step_id"]) == (
        workflow.id,
        "ALERT",
        workflow_run_id,
        "a",
    )
    pipeline.clock.advance(600)
    pipeline.tick()
    assert names["DeadlineMissed"] == 1
    assert len(consumer.events()) == 1


def test_a_workflow_step_with_cancel_past_its_deadline_fails_deadline_without_running(pipeline):
    workflow = create(
        pipeline,
        [step("a", type="echo", retry={"max_attempts": 1}, deadline={"within_seconds": 30, "on_miss": "CANCEL"})],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.clock.advance(31)
    pipeline.tick()
    pipeline.drain()
    run = pipeline.run(step_run_id_for(workflow_run_id, "a"))
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "deadline"
    assert run.deadline_missed_at is not None
    assert pipeline.result_objects() == []  # its handler never ran


def test_a_running_workflow_step_past_its_cancel_deadline_is_stopped_and_fails_deadline(pipeline):
    """The tick records the miss of a step still running and asks it to stop; its next heartbeat sees it, and
    the step's run is FAILED `deadline`, which fails its workflow run."""
    cancel = {"within_seconds": 20, "on_miss": "CANCEL"}
    workflow = create(pipeline, [step("slow", type="hold", retry={"max_attempts": 1}, deadline=cancel)])
    workflow_run_id = occur(pipeline, workflow)
    (message,) = pipeline.receive(Band.NORMAL)
    executor = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [message]))
    executor.start()
    assert HOLD.started.wait(10)
    pipeline.clock.advance(21)
    pipeline.tick()
    HOLD.release.set()
    executor.join(10)
    run = pipeline.run(step_run_id_for(workflow_run_id, "slow"))
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "deadline"
    assert run.deadline_missed_at is not None
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.FAILED


def test_a_held_back_tick_claims_the_least_slack_first_within_fair_share(mocked_aws: None) -> None:
    """Two slots a tick: of one tenant's jobs due together in one band, those whose runs must end soonest go
    first (jobs without a deadline last); a second tenant still gets its share."""
    from tests.harness import Pipeline

    with Pipeline.create(MAX_DISPATCH_PER_TICK="3") as pipeline:
        deadlines = {"none": None, "late": 3000, "soon": 60, "middle": 600}
        jobs = {
            name: pipeline.create_job(
                name=name,
                schedule={"at": START + FAR},
                **({"deadline": {"within_seconds": within}} if within else {}),
            ).id
            for name, within in deadlines.items()
        }
        other = pipeline.create_job("other", name="other", schedule={"at": START + FAR}).id
        pipeline.clock.advance(FAR.total_seconds())

        report = pipeline.services.dispatcher.claim_due_runs()

        assert report.over_capacity == 2
        claimed = {name for name, job_id in jobs.items() if pipeline.runs_of(job_id)}
        assert claimed == {"soon", "middle"}
        assert pipeline.runs_of(other)  # its tenant's share
        # The executors take the runs sent: unleased, their re-sends would compete next with their deadline_at.
        assert deliver_round(pipeline) == 3
        pipeline.clock.advance(60)
        pipeline.services.dispatcher.claim_due_runs()
        assert {name for name, job_id in jobs.items() if pipeline.runs_of(job_id)} == {"soon", "middle", "late", "none"}


def test_a_held_back_tick_re_sends_a_workflow_step_s_run_with_less_slack_before_jobs_with_more(
    mocked_aws: None,
) -> None:
    """Two slots a tick: a workflow step's run whose message was lost is due for its re-send beside three jobs of
    its tenant due at once, one with a later deadline than the step's, one later still, one with none. The step's
    run goes first by the deadline_at its entry carries (counted as no deadline, it would wait behind both jobs
    that have one); the next deadline takes the other slot; the rest wait for the next tick."""
    from tests.harness import Pipeline
    from tests.integration.test_fair_dispatch import sent_run_ids

    with Pipeline.create(MAX_DISPATCH_PER_TICK="2") as pipeline:
        workflow = create(pipeline, [step("a", type="echo", deadline={"within_seconds": 600})])
        occurrence = workflow.next_run_at
        assert occurrence is not None
        jobs_at = occurrence + timedelta(seconds=125)  # beyond the workflow's tick's horizon: claimed by a later one
        deadlines = {"none": None, "late": 1200, "later": 3000}
        jobs = {
            name: pipeline.create_job(
                name=name, schedule={"at": jobs_at}, **({"deadline": {"within_seconds": s}} if s else {})
            ).id
            for name, s in deadlines.items()
        }
        workflow_run_id = occur(pipeline, workflow)
        step_run = step_run_id_for(workflow_run_id, "a")
        pipeline.sqs.purge_queue(QueueUrl=pipeline.resources.queue_urls["normal"])  # the step's message is lost
        pipeline.clock.set(jobs_at)
        pipeline.calls.clear()

        report = pipeline.services.dispatcher.claim_due_runs()

        # Held back: the two other jobs and the workflow run's reconciliation (no deadline of its own).
        assert (report.over_capacity, report.redispatched) == (3, 1)
        assert {name for name, job_id in jobs.items() if pipeline.runs_of(job_id)} == {"late"}
        assert sorted(sent_run_ids(pipeline)) == sorted([step_run, pipeline.runs_of(jobs["late"])[0].id])
        assert deliver_round(pipeline) == 2
        assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.SUCCEEDED
        pipeline.clock.advance(60)
        pipeline.services.dispatcher.claim_due_runs()
        assert {name for name, job_id in jobs.items() if pipeline.runs_of(job_id)} == {"none", "late", "later"}


def test_a_held_back_tick_claims_a_workflow_whose_root_step_has_less_slack_before_jobs_with_more(
    mocked_aws: None,
) -> None:
    """Two slots a tick: a workflow whose root step must end within 120 s of its occurrence is due a second after
    two jobs of its tenant, one with a later deadline, one with none. The workflow's entry competes with its root's
    deadline: its run opens and its root step's run is sent, with the job with a deadline; the other job waits."""
    from tests.harness import Pipeline
    from tests.integration.test_fair_dispatch import sent_run_ids

    with Pipeline.create(MAX_DISPATCH_PER_TICK="2") as pipeline:
        at = START + FAR
        jobs = {
            name: pipeline.create_job(
                name=name, schedule={"at": at}, **({"deadline": {"within_seconds": s}} if s else {})
            ).id
            for name, s in {"none": None, "late": 1200}.items()
        }
        steps = [step("a", type="echo", deadline={"within_seconds": 120}), step("b", "a", type="echo")]
        workflow = create(pipeline, steps, at=at + timedelta(seconds=1))
        pipeline.clock.set(at + timedelta(seconds=1))
        pipeline.calls.clear()

        report = pipeline.services.dispatcher.claim_due_runs()

        assert report.over_capacity == 1
        assert {name for name, job_id in jobs.items() if pipeline.runs_of(job_id)} == {"late"}
        workflow_run_id = run_id_for(workflow.id, at + timedelta(seconds=1))
        root_run = pipeline.run(step_run_id_for(workflow_run_id, "a"))
        assert root_run.deadline_at == at + timedelta(seconds=121)
        assert sorted(sent_run_ids(pipeline)) == sorted([root_run.id, pipeline.runs_of(jobs["late"])[0].id])


def test_a_workflow_whose_steps_change_keeps_its_entry_s_root_deadline_in_step(pipeline) -> None:
    """The workflow's entry carries its roots' soonest deadline as its steps say now: a change that takes it away
    takes it off the entry (the tick would otherwise put the workflow first for a deadline it no longer has)."""
    workflow = create(pipeline, [step("a", type="echo", deadline={"within_seconds": 120})])
    assert _entry(pipeline, workflow.id).get(ROOTS_DEADLINE_SECONDS) == {"N": "120"}
    patch = WorkflowUpdate.model_validate({"steps": [step("a", type="echo")]})
    pipeline.services.workflows.update(TENANT, workflow.id, patch)
    assert ROOTS_DEADLINE_SECONDS not in _entry(pipeline, workflow.id)


def _entry(pipeline, workflow_id: str) -> dict[str, Any]:
    client = pipeline.services.clients.client("dynamodb")
    table = pipeline.services.settings.table_name
    return client.get_item(TableName=table, Key={"pk": {"S": f"JOB#{workflow_id}"}, "sk": {"S": "JOB"}})["Item"]
