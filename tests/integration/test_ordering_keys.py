"""Ordering keys (docs/fairness.md, "Ordering keys") through the real pipeline (moto): runs of a key run one at a
time in the order of their scheduled times whatever order their messages come in, across racing executors and a
duplicate message; a FAILED run blocks the key until it is retried, or skipped; `continue` and BUFFER_ALL let the
next run go; deferrals consume no attempt."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from executor import app as executor_app
from pydantic import BaseModel, ConfigDict
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.job import Job
from tickwork.model.policies import Band, OrderingKey
from tickwork.model.run import Run
from tickwork.model.states import DeferReason, RunStatus
from tickwork.observability import metrics
from tickwork.store.ordering import entry_sort
from tickwork_local.runtime.lambda_runtime import LocalLambdaContext, failed_message_ids, sqs_event

from tests.conftest import json_lines
from tests.harness import Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

FAR = timedelta(seconds=300)
EXECUTORS = 3


class OrderProbe:
    """Where `ordered` handlers note their starts, in order, and how many ran at once; a run in `failing` fails."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[str] = []
        self.inside = 0
        self.most = 0
        self.failing: set[str] = set()

    def reset(self) -> None:
        with self.lock:
            self.started, self.inside, self.most, self.failing = [], 0, 0, set()


PROBE = OrderProbe()


class _Payload(BaseModel):
    model_config = ConfigDict(extra="allow")


if "ordered" not in registry:

    @job_type("ordered", _Payload)
    def ordered(payload: _Payload, ctx: RunContext) -> dict[str, Any]:
        with PROBE.lock:
            PROBE.started.append(ctx.run_id)
            PROBE.inside += 1
            PROBE.most = max(PROBE.most, PROBE.inside)
        try:
            ctx.sleep(0.01)  # long enough for racing executors to meet it inside
            if ctx.run_id in PROBE.failing:
                raise RuntimeError("the ledger refused it")
        finally:
            with PROBE.lock:
                PROBE.inside -= 1
        return {"run_id": ctx.run_id}


@pytest.fixture(autouse=True)
def probe() -> Iterator[OrderProbe]:
    PROBE.reset()
    metrics.clear_metrics()
    yield PROBE
    metrics.clear_metrics()


def _jobs_due_in_turn(pipeline: Pipeline, count: int, **spec: Any) -> list[Job]:
    """`count` one-shot jobs due a second apart, claimed by one tick: their runs exist, their messages are sent."""
    at = pipeline.clock.now() + FAR
    spec.setdefault("retry", {"max_attempts": 1})
    jobs = [
        pipeline.create_job(name=f"ledger {i}", type="ordered", schedule={"at": at + timedelta(seconds=i)}, **spec)
        for i in range(count)
    ]
    pipeline.clock.advance(FAR.total_seconds() + count)
    pipeline.tick()
    return jobs


def _run_of(pipeline: Pipeline, job: Job) -> Run:
    [run] = pipeline.runs_of(job.id)
    return run


def _later_first(pipeline: Pipeline, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Out of order: the latest scheduled run's message first."""
    return sorted(messages, key=lambda m: pipeline.run(json.loads(m["Body"])["run_id"]).scheduled_for, reverse=True)


def _deliver_racing(pipeline: Pipeline, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message to its own executor invocation, EXECUTORS at once, in the order given; the messages that
    came back (deferred or busy), with the clock moved past the longest wait any of them was set."""
    url = pipeline.resources.queue_urls[Band.NORMAL.value]

    def invoke(message: dict[str, Any]) -> bool:
        response = executor_app.handler(sqs_event([message], url), LocalLambdaContext("ExecutorFunction", 900))
        return bool(failed_message_ids(response))

    with ThreadPoolExecutor(max_workers=EXECUTORS) as pool:
        back = [m for m, failed in zip(messages, pool.map(invoke, messages), strict=True) if failed]
    waits = [pipeline.visibility_set_for(m["ReceiptHandle"])[-1] for m in back]
    if waits:
        pipeline.clock.advance(max(waits))
    return back


def _deliver_until_settled(pipeline: Pipeline, messages: list[dict[str, Any]], *, rounds: int = 40) -> int:
    """Deliver, racing, latest first, until no message comes back; the rounds it took."""
    for round_ in range(1, rounds + 1):
        messages = _deliver_racing(pipeline, _later_first(pipeline, messages))
        if not messages:
            return round_
    raise AssertionError("runs did not settle")


def _duplicate(pipeline: Pipeline, message: dict[str, Any]) -> dict[str, Any]:
    """The same run message again, as SQS's at-least-once delivery may hand it over."""
    url = pipeline.resources.queue_urls[Band.NORMAL.value]
    pipeline.sqs.send_message(QueueUrl=url, MessageBody=message["Body"])
    [again] = [m for m in pipeline.receive(Band.NORMAL) if m["Body"] == message["Body"]]
    return again


def _emitted(name: str, printed: str) -> int:
    """How much of metric `name` the handlers' EMF documents in `printed` (their stdout) carry: metrics are on, as
    deployed, so each invocation flushes its own."""
    total = 0
    for document in json_lines(printed):
        value = document.get(name) if "_aws" in document else None
        total += int(sum(value)) if isinstance(value, list) else int(value or 0)
    return total


def test_runs_of_a_key_run_one_at_a_time_in_scheduled_order_across_executors_out_of_order_and_duplicated(pipeline):
    jobs = _jobs_due_in_turn(pipeline, 4, ordering={"key": "ledger"})
    runs = [_run_of(pipeline, job) for job in jobs]
    messages = pipeline.receive(Band.NORMAL)
    assert len(messages) == 4
    first = next(m for m in messages if runs[0].id in m["Body"])
    second = next(m for m in messages if runs[1].id in m["Body"])
    # The first run's message is late: the other three (and a duplicate of the second's) come first, racing.
    early = [m for m in messages if m is not first] + [_duplicate(pipeline, second)]
    back = _deliver_racing(pipeline, _later_first(pipeline, early))
    assert PROBE.started == []  # none started before the earliest run of its key
    waiting = [pipeline.run(r.id) for r in runs[1:]]
    assert {r.deferred_reason for r in waiting} == {DeferReason.ORDERING_KEY}
    assert all(r.attempts == 0 and r.status is RunStatus.QUEUED for r in waiting)  # no attempt consumed
    _deliver_until_settled(pipeline, [first, *back])
    assert PROBE.started == [r.id for r in runs]  # in their scheduled order, each once
    assert PROBE.most == 1
    assert [pipeline.run(r.id).status for r in runs] == [RunStatus.SUCCEEDED] * 4
    assert all(pipeline.run(r.id).attempts == 1 for r in runs)
    # Nothing is left in the key's queue, and its turn is nobody's.
    records = pipeline.services.store.runs.ordering
    assert records.first(runs[0].tenant, "ledger", after=records.head(runs[0].tenant, "ledger").after) is None
    assert records.head(runs[0].tenant, "ledger").holder is None


def _first_fails_and_blocks(pipeline: Pipeline) -> tuple[list[Run], list[dict[str, Any]]]:
    """Three runs of "ledger", the first failing: delivered round after round (each moving the clock past the
    waits) until only the blocked runs come back. Returns the runs and their messages still waiting."""
    jobs = _jobs_due_in_turn(pipeline, 3, ordering={"key": "ledger"})
    runs = [_run_of(pipeline, job) for job in jobs]
    PROBE.failing.add(runs[0].id)
    messages = pipeline.receive(Band.NORMAL)
    for _ in range(6):
        messages = _deliver_racing(pipeline, _later_first(pipeline, messages))
    return runs, messages


def test_a_failed_run_blocks_its_key_until_it_is_retried_then_the_key_goes_on_in_order(pipeline, capsys):
    runs, messages = _first_fails_and_blocks(pipeline)
    assert pipeline.run(runs[0].id).status is RunStatus.FAILED
    assert PROBE.started == [runs[0].id]  # the runs behind it did not start
    blocked = [pipeline.run(r.id) for r in runs[1:]]
    assert {r.deferred_reason for r in blocked} == {DeferReason.ORDERING_BLOCKED}
    assert all(r.status is RunStatus.QUEUED and r.attempts == 0 for r in blocked)
    assert _emitted("OrderingKeysBlocked", capsys.readouterr().out) >= 1
    assert pipeline.services.store.runs.ordering.head(runs[0].tenant, "ledger").blocked

    # The user fixes what failed and retries it: it runs again in its turn, then the others, in order.
    PROBE.failing.clear()
    pipeline.services.redrive.retry_run(runs[0].tenant, runs[0].id)
    retried = [m for m in pipeline.receive(Band.NORMAL) if runs[0].id in m["Body"]]
    _deliver_until_settled(pipeline, retried + messages)
    assert PROBE.started == [runs[0].id, runs[0].id, runs[1].id, runs[2].id]
    assert PROBE.most == 1
    assert [pipeline.run(r.id).status for r in runs] == [RunStatus.SUCCEEDED] * 3


def test_skipping_the_failed_run_lets_the_key_go_on_and_the_run_stays_failed(pipeline):
    runs, messages = _first_fails_and_blocks(pipeline)
    assert PROBE.started == [runs[0].id]
    skipped = pipeline.services.ordering_keys.skip(runs[0].tenant, runs[0].id)
    assert skipped.status is RunStatus.FAILED
    _deliver_until_settled(pipeline, messages)
    assert PROBE.started == [r.id for r in runs]
    assert pipeline.run(runs[0].id).status is RunStatus.FAILED
    assert [pipeline.run(r.id).status for r in runs[1:]] == [RunStatus.SUCCEEDED] * 2


def test_on_failure_continue_lets_the_next_run_go_after_a_failure(pipeline, capsys):
    jobs = _jobs_due_in_turn(pipeline, 3, ordering={"key": "ledger", "on_failure": "continue"})
    runs = [_run_of(pipeline, job) for job in jobs]
    PROBE.failing.add(runs[1].id)
    _deliver_until_settled(pipeline, pipeline.receive(Band.NORMAL))
    assert PROBE.started == [r.id for r in runs]
    assert [pipeline.run(r.id).status for r in runs] == [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SUCCEEDED]
    printed = capsys.readouterr().out
    assert _emitted("RunsFailed", printed) >= 1  # the documents were read: the failure's metric is among them
    assert _emitted("OrderingKeysBlocked", printed) == 0


def test_buffer_all_runs_a_jobs_triggered_runs_one_at_a_time_in_order(pipeline):
    job = pipeline.create_job(type="ordered", schedule={"cron": "0 0 1 1 *"}, overlap="BUFFER_ALL")
    runs = []
    for _ in range(3):
        runs.append(pipeline.services.jobs.trigger(job.tenant, job.id))
        pipeline.clock.advance(0.001)
    PROBE.failing.add(runs[0].id)
    _deliver_until_settled(pipeline, pipeline.receive(Band.NORMAL))
    # The first keeps its turn through its retries (3 attempts); the others wait for its end.
    assert PROBE.started == [runs[0].id] * 3 + [runs[1].id, runs[2].id]
    assert PROBE.most == 1
    # Like Temporal's BufferAll, a failed run lets the next go.
    assert [pipeline.run(r.id).status for r in runs] == [RunStatus.FAILED, RunStatus.SUCCEEDED, RunStatus.SUCCEEDED]


def test_a_run_that_ended_without_giving_its_turn_back_is_tidied_by_the_next(pipeline):
    jobs = _jobs_due_in_turn(pipeline, 2, ordering={"key": "ledger"})
    runs = [_run_of(pipeline, job) for job in jobs]
    records = pipeline.services.store.runs.ordering
    messages = pipeline.receive(Band.NORMAL)
    _deliver_until_settled(pipeline, [m for m in messages if runs[0].id in m["Body"]])
    assert pipeline.run(runs[0].id).status is RunStatus.SUCCEEDED
    # As if its executor had died after recording the success, before giving the turn back.
    first = pipeline.run(runs[0].id)
    records.enqueue(first, now=pipeline.clock.now())
    assert records.take(first.tenant, OrderingKey(key="ledger"), run_id=first.id, sort=entry_sort("ledger", first))
    _deliver_until_settled(pipeline, [m for m in messages if runs[1].id in m["Body"]])
    assert PROBE.started == [runs[0].id, runs[1].id]
    assert pipeline.run(runs[1].id).status is RunStatus.SUCCEEDED
    assert records.first(first.tenant, "ledger", after=records.head(first.tenant, "ledger").after) is None
    assert records.head(first.tenant, "ledger").holder is None


def test_a_run_claimed_at_create_is_queued_under_its_jobs_ordering_key(pipeline):
    # Due within the horizon: claimed as the job is created (ClaimableJob.from_job), not by a tick.
    job = pipeline.create_job(
        type="ordered", schedule={"at": pipeline.clock.now() + timedelta(seconds=2)}, ordering={"key": "ledger"}
    )
    [run] = pipeline.runs_of(job.id)
    assert run.ordering == OrderingKey(key="ledger")
    records = pipeline.services.store.runs.ordering
    entry = records.first(run.tenant, "ledger", after=None)
    assert entry is not None
    assert entry.run_id == run.id


def test_workflow_steps_sharing_a_key_run_one_at_a_time_in_run_id_order(pipeline):
    from tickwork.control.api_bodies import WorkflowSpec

    steps = [{"id": s, "type": "ordered", "ordering": {"key": "ledger"}, "retry": {"max_attempts": 1}} for s in "ab"]
    body = {"name": "wf", "schedule": {"at": pipeline.clock.now() + FAR}, "steps": steps}
    workflow = pipeline.services.workflows.create("default", WorkflowSpec.model_validate(body))
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    messages = pipeline.receive(Band.NORMAL)
    assert len(messages) == 2  # both roots queued at once, same scheduled time: the run id breaks the tie
    _deliver_until_settled(pipeline, messages)
    assert [run_id.rsplit(".s-", 1)[1] for run_id in PROBE.started] == ["a", "b"]
    assert PROBE.most == 1
    assert workflow.id in PROBE.started[0]


def test_a_run_created_after_its_key_was_blocked_waits_until_the_blocker_is_skipped(pipeline):
    """docs/fairness.md's worked example: the first run fails alone and blocks the key; a run created afterwards
    waits behind it (ordering_blocked) instead of running, until the failed run is skipped."""
    [first] = _jobs_due_in_turn(pipeline, 1, ordering={"key": "ledger"})
    [failed] = pipeline.runs_of(first.id)
    PROBE.failing.add(failed.id)
    _deliver_until_settled(pipeline, pipeline.receive(Band.NORMAL))
    assert pipeline.run(failed.id).status is RunStatus.FAILED
    assert pipeline.services.store.runs.ordering.head(failed.tenant, "ledger").blocked

    [second] = _jobs_due_in_turn(pipeline, 1, ordering={"key": "ledger"})
    [waiting] = pipeline.runs_of(second.id)
    back = _deliver_racing(pipeline, pipeline.receive(Band.NORMAL))
    assert back  # deferred, not run
    assert pipeline.run(waiting.id).deferred_reason is DeferReason.ORDERING_BLOCKED
    assert PROBE.started == [failed.id]

    pipeline.services.ordering_keys.skip(failed.tenant, failed.id)
    _deliver_until_settled(pipeline, back)
    assert pipeline.run(waiting.id).status is RunStatus.SUCCEEDED
    assert PROBE.started == [failed.id, waiting.id]
