"""Regression tests for issue "The promises, hardened": each is named after the defect it reproduced.

Every test here failed on the main branch before its fix (the issue's note lists how each failed). They run
the real handlers against moto with the template's settings; time is a fake clock, never a sleep, except
where a handler must really block (a thread that ignores cancellation), and then only for about a second.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, StrictBool
from tickwork.aws.clients import AwsClients
from tickwork.executor.run_executor import Delivery, Handlers, Outcome, RunExecutor
from tickwork.faults import CrashPoint
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.errors import Conflict
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band, NotCoerced
from tickwork.model.states import JobState, RunStatus, SkipReason
from tickwork.store import job_key

from tests.faults.crashes import ProcessKilled
from tests.harness import START, Pipeline
from tests.integration.test_freeze_events_pipeline import _freeze_queries

FAR = timedelta(seconds=300)
LEASE_SECONDS = 60  # the template's default LeaseSeconds


class FixedRandom:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


# ---------------------------------------------------------------- job types that block for real


class GatePayload(BaseModel):
    model_config = ConfigDict(extra="allow")
    hold_seconds: Annotated[float, NotCoerced] = 0
    cooperative: StrictBool = True
    fail_if_cancelled: StrictBool = True  # a handler that notices its cancellation only once it is done


class Gate:
    """Counts handlers running right now, and the most that ever ran at once, per job."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.started = threading.Event()
        self.release = threading.Event()
        self.completions: list[str] = []

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


GATE = Gate()

if "gate" not in registry:

    @job_type("gate", GatePayload)
    def gate(payload: GatePayload, ctx: RunContext) -> dict[str, Any]:
        """Holds the run for `hold_seconds` of real time, or until released; ignores cancellation unless
        `cooperative` (a blocking call that never checks ctx)."""
        with GATE.lock:
            GATE.active += 1
            GATE.max_active = max(GATE.max_active, GATE.active)
        GATE.started.set()
        try:
            deadline = time.monotonic() + payload.hold_seconds
            while time.monotonic() < deadline and not GATE.release.is_set():
                if payload.cooperative:
                    ctx.check()
                time.sleep(0.01)
            GATE.completions.append(ctx.run_id)
            if payload.fail_if_cancelled and ctx.cancelled.is_set():
                raise RuntimeError("cancelled: noticed once done")
            return {"run_id": ctx.run_id}
        finally:
            with GATE.lock:
                GATE.active -= 1


@pytest.fixture(autouse=True)
def _fresh_gate() -> Iterator[None]:
    GATE.reset()
    yield
    GATE.release.set()


def _due(pipeline: Pipeline, **spec: Any):
    job = pipeline.create_job(schedule={"at": START + FAR}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def _messages_for(pipeline: Pipeline, band: Band, run_id: str) -> list[dict[str, Any]]:
    return [m for m in pipeline.receive(band) if json.loads(m["Body"])["run_id"] == run_id]


# ---------------------------------------------------------------- 1. early crash strands a run for 90 minutes


class ExecutorKilled(BaseException):
    """The Lambda's process dying (timeout, out of memory, SIGKILL): nothing after it runs, nothing is caught."""


if "killed-early" not in registry:

    @job_type("killed-early", GatePayload)
    def killed_early(payload: GatePayload, ctx: RunContext) -> dict[str, Any]:
        raise ExecutorKilled


def test_early_executor_crash_does_not_strand_a_run_for_90_minutes(pipeline):
    job = _due(pipeline, type="killed-early")
    (message,) = pipeline.receive(Band.NORMAL)
    with pytest.raises(ExecutorKilled):
        pipeline.deliver(Band.NORMAL, [message])
    run_id = json.loads(message["Body"])["run_id"]
    run = pipeline.run(run_id)
    assert run.status is RunStatus.RUNNING
    # Before the run was leased, the message was made to come back when the lease ends (+15 s), not after the
    # queue's 5,400 s: the run is retried within lease + 15 s of the crash, whatever point it died at.
    visibilities = pipeline.visibility_set_for(message["ReceiptHandle"])
    assert visibilities, "the message kept the queue's 90-minute visibility"
    assert visibilities[-1] <= LEASE_SECONDS + 15
    assert run.lease_until is not None
    assert run.lease_until <= pipeline.clock.now() + timedelta(seconds=LEASE_SECONDS)
    # Time passes as SQS would see it; the message returns and another executor takes the run over.
    pipeline.clock.advance(visibilities[-1])
    pipeline.sqs.change_message_visibility(
        QueueUrl=pipeline.resources.queue_urls["normal"], ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    (again,) = pipeline.receive(Band.NORMAL)
    assert json.loads(again["Body"])["run_id"] == run_id
    assert pipeline.runs_of(job.id)[0].attempts == 1


# ---------------------------------------------------------------- 2. a timed-out attempt runs on beside its retry


def test_timed_out_attempt_holds_its_lease_until_the_handler_has_ended(pipeline):
    pipeline.services.executor.rng = FixedRandom(0.0)
    job = _due(
        pipeline,
        type="gate",
        payload={"hold_seconds": 1.5, "cooperative": False},
        timeout_seconds=1,
        retry={"max_attempts": 2},
    )
    (message,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [message])
    run = pipeline.run(json.loads(message["Body"])["run_id"])
    # The attempt timed out, but its handler ignored the cancellation: the outcome is recorded (and the lease
    # let go) only once that handler has really ended, so no retry can start beside it.
    assert run.status is RunStatus.RETRYING
    assert run.error is not None
    assert run.error.type == "RunTimeout"
    assert GATE.active == 0
    assert GATE.completions == [run.id]
    pipeline.clock.advance(pipeline.visibility_set_for(message["ReceiptHandle"])[-1])
    pipeline.sqs.change_message_visibility(
        QueueUrl=pipeline.resources.queue_urls["normal"], ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    pipeline.drain()
    assert GATE.max_active == 1
    final = pipeline.runs_of(job.id)[0]
    assert final.attempts == 2
    assert final.status is RunStatus.FAILED


# ---------------------------------------------------------------- 3. one attempt invokes the target six times


class ClosingEndpoint:
    """A loopback endpoint that accepts each connection, reads the request and closes without answering: what a
    dropped connection looks like to botocore, which its standard retry mode re-sends."""

    def __init__(self, *, hang_seconds: float = 0) -> None:
        self.requests = 0
        self.hang_seconds = hang_seconds
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                self.requests += 1
                self._stop.wait(self.hang_seconds)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def closing_endpoint() -> Iterator[ClosingEndpoint]:
    endpoint = ClosingEndpoint()
    yield endpoint
    endpoint.close()


def _execute_with_lambda_endpoint(pipeline: Pipeline, url: str) -> Outcome:
    """Receive the one due message and run it in an executor whose AWS clients call `url` (the target)."""
    (message,) = pipeline.receive(Band.NORMAL)
    s = pipeline.services
    executor = RunExecutor(
        s.store,
        s.results,
        s.queues,
        Handlers(registry, clients=AwsClients(endpoint_url=url)),
        s.clock,
        rng=FixedRandom(0.0),
    )
    queue_url = pipeline.resources.queue_urls["normal"]
    delivery = Delivery(message["Body"], message["MessageId"], message["ReceiptHandle"], queue_url, Band.NORMAL)
    return executor.execute(delivery, lambda: 900_000)


def test_lambda_attempt_invokes_the_target_exactly_once(pipeline, closing_endpoint):
    job = _due(
        pipeline,
        type="lambda",
        payload={"function_arn": "tickwork-job-target"},
        timeout_seconds=5,
        retry={"max_attempts": 2},
    )
    outcome = _execute_with_lambda_endpoint(pipeline, closing_endpoint.url)
    assert outcome is Outcome.RETRY_LATER
    # One attempt is one Invoke: a non-idempotent target is never called again by a client-side retry.
    assert closing_endpoint.requests == 1
    run = pipeline.runs_of(job.id)[0]
    assert run.status is RunStatus.RETRYING


def test_lambda_invoke_that_times_out_is_not_retried_before_the_target_can_have_ended(pipeline):
    endpoint = ClosingEndpoint(hang_seconds=30)  # longer than any wait a loaded machine adds to the 1 s timeout
    try:
        job = _due(
            pipeline,
            type="lambda",
            payload={"function_arn": "tickwork-job-target"},
            timeout_seconds=1,
            retry={"max_attempts": 2},
        )
        started = time.monotonic()
        _execute_with_lambda_endpoint(pipeline, endpoint.url)
        # The client's read timeout (the time the run had left) ended the wait, not the endpoint.
        assert time.monotonic() - started < 15
        run = pipeline.runs_of(job.id)[0]
        assert run.status is RunStatus.RETRYING
        assert endpoint.requests == 1
        # The target may still be running (a Lambda runs up to 900 s after its caller gave up): the next attempt
        # is not allowed before that, whatever message arrives first.
        assert run.not_before is not None
        assert run.not_before >= pipeline.clock.now() + timedelta(seconds=900)
    finally:
        endpoint.close()


# ---------------------------------------------------------------- 4./5. overlap SKIP


def _run_in_background(pipeline: Pipeline, band: Band, messages: list[dict[str, Any]]) -> threading.Thread:
    thread = threading.Thread(target=pipeline.deliver, args=(band, messages), daemon=True)
    thread.start()
    return thread


def test_overlap_skip_sees_a_running_run_behind_many_newer_queued_runs(pipeline):
    starts = START + FAR
    job = pipeline.create_job(
        schedule={"rate": "1 second", "start_at": starts}, type="gate", payload={"hold_seconds": 30}, overlap="SKIP"
    )
    pipeline.clock.set(starts + timedelta(seconds=5))
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    first, second = runs[0], runs[1]
    assert sum(1 for r in runs if r.scheduled_for > second.scheduled_for) > 100  # newer runs, all QUEUED
    due_now = [m for band in Band for m in pipeline.receive(band)]
    by_run = {json.loads(m["Body"])["run_id"]: m for m in due_now}
    holder = _run_in_background(pipeline, Band.NORMAL, [by_run[first.id]])
    assert GATE.started.wait(5)
    pipeline.deliver(Band.NORMAL, [by_run[second.id]])
    GATE.release.set()
    holder.join(10)
    assert pipeline.run(second.id).status is RunStatus.SKIPPED
    assert pipeline.run(second.id).skip_reason is SkipReason.OVERLAP
    assert pipeline.run(first.id).status is RunStatus.SUCCEEDED


def test_two_overlapping_runs_starting_together_do_not_both_skip(pipeline):
    job = pipeline.create_job(schedule={"at": START + FAR}, type="gate", payload={"hold_seconds": 0.2}, overlap="SKIP")
    a = pipeline.services.jobs.trigger("default", job.id)
    b = pipeline.services.jobs.trigger("default", job.id)
    messages = pipeline.receive(Band.NORMAL)  # triggers start now: no delay, whatever the id's millisecond
    assert {json.loads(m["Body"])["run_id"] for m in messages} == {a.id, b.id}
    # Both take their run's lease before either looks at the job: the race the overlap check must survive.
    store = pipeline.services.store
    barrier = threading.Barrier(2, timeout=10)
    original = store.jobs.get_job

    def get_job_after_both_leased(job_id: str, **kwargs: Any):
        barrier.wait()
        return original(job_id, **kwargs)

    store.jobs.get_job = get_job_after_both_leased  # type: ignore[method-assign]
    try:
        pipeline.deliver(Band.NORMAL, messages)
    finally:
        store.jobs.get_job = original  # type: ignore[method-assign]
    statuses = sorted(pipeline.run(r.id).status.value for r in (a, b))
    assert statuses == ["SKIPPED", "SUCCEEDED"]


# ---------------------------------------------------------------- 6. retry backoff bypassed by a duplicate


def test_duplicate_message_does_not_bypass_retry_backoff(pipeline):
    pipeline.services.executor.rng = FixedRandom(1.0)
    job = _due(pipeline, payload={"fail_attempts": 1}, retry={"max_attempts": 3, "backoff_seconds": 300})
    (message,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [message])
    run = pipeline.runs_of(job.id)[0]
    assert run.status is RunStatus.RETRYING
    assert run.attempts == 1
    # A duplicate of the message arrives at once (a re-send, SQS's at-least-once delivery).
    pipeline.services.dispatcher.send_runs([run])
    (duplicate,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [duplicate])
    after = pipeline.run(run.id)
    assert after.status is RunStatus.RETRYING
    assert after.attempts == 1  # attempt 2 waits for its backoff
    assert after.not_before == pipeline.clock.now() + timedelta(seconds=300)
    # The duplicate is told to come back when the backoff ends.
    assert pipeline.visibility_set_for(duplicate["ReceiptHandle"])[-1] == 300


def test_resend_of_unleased_runs_waits_while_the_band_has_a_backlog(pipeline):
    for i in range(5):
        pipeline.create_job(name=f"j{i}", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    assert pipeline.queued_messages(Band.NORMAL) == 5
    # Nobody consumes (every executor is busy): the messages wait in the queue, visible.
    pipeline.clock.advance(120)
    report = pipeline.tick()
    assert report["redispatched"] == 0
    assert pipeline.queued_messages(Band.NORMAL) == 5
    # The messages are lost (purged): the band has no backlog, so the next tick re-sends the runs.
    pipeline.sqs.purge_queue(QueueUrl=pipeline.resources.queue_urls["normal"])
    pipeline.clock.advance(600)
    report = pipeline.tick()
    assert report["redispatched"] == 5
    pipeline.drain()
    assert pipeline.count_items(kind="RUN") == 5


# ---------------------------------------------------------------- 7. a retrying run lost to message retention


def test_retrying_run_is_not_lost_when_its_backoff_outlives_message_retention(pipeline):
    pipeline.services.executor.rng = FixedRandom(1.0)
    job = _due(
        pipeline,
        payload={"fail_attempts": 11},
        retry={"max_attempts": 12, "backoff_seconds": 3600, "max_backoff_seconds": 43200},
    )
    retention = 345_600
    first_seen: dict[str, Any] = {}
    for _ in range(40):
        run = pipeline.runs_of(job.id)[0]
        if run.status.terminal:
            break
        delivered = False
        for band in Band:
            for m in pipeline.receive(band):
                first_seen.setdefault(m["MessageId"], pipeline.clock.now())
                # No message is still needed past the queue's retention, counted from its first receipt.
                assert (pipeline.clock.now() - first_seen[m["MessageId"]]).total_seconds() < retention
                pipeline.deliver(band, [m])
                delivered = True
                for wait in pipeline.visibility_set_for(m["ReceiptHandle"])[-1:]:
                    assert wait <= 43_200  # SQS's visibility cap
                    if m["MessageId"] in {x["MessageId"] for x in pipeline._last_failed}:
                        pipeline.clock.advance(wait)
                        pipeline.sqs.change_message_visibility(
                            QueueUrl=pipeline.resources.queue_urls[band.value],
                            ReceiptHandle=m["ReceiptHandle"],
                            VisibilityTimeout=0,
                        )
        if not delivered:
            # Nothing in flight: the retry is parked in the due index; move time to just before it is due.
            parked = pipeline.runs_of(job.id)[0]
            assert parked.not_before is not None
            gap = (parked.not_before - pipeline.clock.now()).total_seconds()
            pipeline.clock.advance(max(60, gap))
            pipeline.tick()
    run = pipeline.runs_of(job.id)[0]
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempts == 12


# ---------------------------------------------------------------- 8. a tick dying mid catch-up loses an occurrence


def test_tick_dying_mid_catch_up_leaves_no_occurrence_without_a_record(pipeline):
    job = pipeline.create_job(schedule={"cron": "* * * * *"})
    pipeline.clock.advance(3 * 3600)  # a three-hour outage
    pipeline.crashes.arm(CrashPoint.TICK_AFTER_RUN_PUT)
    with pytest.raises(ProcessKilled):
        pipeline.tick()  # claims (run puts), dies before advancing the job
    assert pipeline.crashes.kills == 1
    for _ in range(4):
        pipeline.clock.advance(60)
        pipeline.tick()
    runs = pipeline.runs_of(job.id)
    now = pipeline.clock.now()
    minute = timedelta(minutes=1)
    expected = []
    at = START + minute
    while at <= now:
        expected.append(at)
        at += minute
    covered: dict[Any, int] = {}
    for r in runs:
        if r.skipped_count and r.skipped_until is not None:
            at = r.scheduled_for
            while at <= r.skipped_until:
                covered[at] = covered.get(at, 0) + 1
                at += minute
        else:
            covered[r.scheduled_for] = covered.get(r.scheduled_for, 0) + 1
    missing = [a for a in expected if a not in covered]
    doubled = [a for a, n in covered.items() if n > 1]
    assert missing == []
    assert doubled == []


# ---------------------------------------------------------------- 10. one-shot COMPLETED too early


def test_one_shot_success_of_an_earlier_at_does_not_complete_a_moved_job(pipeline):
    job = _due(pipeline)  # its run is claimed and sent
    (queued,) = pipeline.runs_of(job.id)
    later = pipeline.clock.now() + timedelta(hours=1)
    moved = pipeline.services.jobs.update("default", job.id, _patch(schedule={"at": later}))
    assert moved.next_run_at == later
    pipeline.drain()
    assert pipeline.run(queued.id).status is RunStatus.SUCCEEDED
    still = pipeline.services.store.jobs.get_job(job.id)
    assert still is not None
    assert still.state is JobState.ACTIVE  # the moved occurrence is still to come
    pipeline.clock.advance(3600)
    pipeline.tick()
    pipeline.drain()
    done = pipeline.services.store.jobs.get_job(job.id)
    assert done is not None
    assert done.state is JobState.COMPLETED
    assert [r.status for r in pipeline.runs_of(job.id)] == [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED]


def test_completed_one_shot_leaves_the_due_index(pipeline):
    job = _due(pipeline)
    pipeline.drain()
    item = pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key=job_key(job.id)
    )["Item"]
    assert item["state"]["S"] == "COMPLETED"
    assert "due_shard" not in item
    assert "due_at" not in item


def test_recurring_job_with_end_at_is_not_completed_while_its_last_runs_are_queued(pipeline):
    job = pipeline.create_job(
        schedule={"cron": "* * * * *", "start_at": START + FAR, "end_at": START + FAR + timedelta(minutes=1)}
    )
    pipeline.clock.advance(FAR.total_seconds() + 61)
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    assert [r.status for r in runs] == [RunStatus.QUEUED, RunStatus.QUEUED]
    current = pipeline.services.store.jobs.get_job(job.id)
    assert current is not None
    assert current.state is JobState.ACTIVE
    # Cancelling while the last runs are queued is allowed, and they are recorded SKIPPED cancelled.
    cancelled = pipeline.services.jobs.cancel("default", job.id)
    assert cancelled.state is JobState.CANCELLED
    pipeline.drain()
    assert {(r.status, r.skip_reason) for r in pipeline.runs_of(job.id)} == {(RunStatus.SKIPPED, SkipReason.CANCELLED)}


def test_recurring_job_completes_once_its_last_occurrence_has_settled(pipeline):
    job = pipeline.create_job(
        schedule={"cron": "* * * * *", "start_at": START + FAR, "end_at": START + FAR + timedelta(minutes=1)}
    )
    pipeline.clock.advance(FAR.total_seconds() + 61)
    pipeline.tick()
    pipeline.drain()
    done = pipeline.services.store.jobs.get_job(job.id)
    assert done is not None
    assert done.state is JobState.COMPLETED
    with pytest.raises(Conflict):
        pipeline.services.jobs.cancel("default", job.id)


def _deliver_only(pipeline: Pipeline, run_id: str) -> None:
    """Hand the executor this run's message alone; the job's other messages go back to the queue, visible."""
    band = pipeline.run(run_id).band
    messages = pipeline.receive(band)
    chosen = [m for m in messages if json.loads(m["Body"])["run_id"] == run_id]
    assert chosen, f"no message for {run_id}"
    for m in messages:
        if m not in chosen:
            pipeline.sqs.change_message_visibility(
                QueueUrl=pipeline.resources.queue_urls[band.value],
                ReceiptHandle=m["ReceiptHandle"],
                VisibilityTimeout=0,
            )
    pipeline.deliver(band, chosen)


def test_a_job_is_not_completed_while_an_earlier_run_of_it_is_still_queued(pipeline):
    """The last occurrence's run settles first (the earlier one's message is late: a re-send, a retry, a slow
    batch). The job stays ACTIVE until the earlier run has settled too; that run's settling completes it."""
    job = pipeline.create_job(
        schedule={"cron": "* * * * *", "start_at": START + FAR, "end_at": START + FAR + timedelta(minutes=1)},
        payload={},
    )
    pipeline.clock.advance(FAR.total_seconds() + 61)
    pipeline.tick()
    earlier, last = pipeline.runs_of(job.id)
    _deliver_only(pipeline, last.id)
    assert pipeline.run(last.id).status is RunStatus.SUCCEEDED
    assert pipeline.run(earlier.id).status is RunStatus.QUEUED
    assert pipeline.services.queries.get_job("default", job.id).state is JobState.ACTIVE

    pipeline.drain()
    assert pipeline.run(earlier.id).status is RunStatus.SUCCEEDED
    assert pipeline.services.queries.get_job("default", job.id).state is JobState.COMPLETED


def test_a_job_whose_last_occurrence_misfired_is_not_completed_while_an_earlier_run_is_queued(pipeline):
    """The claim completes a job whose last occurrence it records as a skip (misfired): not while a run of an
    earlier occurrence has still to settle; that run's settling completes it."""
    job = pipeline.create_job(
        schedule={"cron": "*/30 * * * *", "start_at": START + FAR, "end_at": START + timedelta(minutes=60)},
        catchup="NONE",
        misfire_grace_seconds=60,
        payload={},
    )
    pipeline.clock.advance(30 * 60)
    pipeline.tick()  # 12:30 claimed (13:00 is beyond the horizon)
    (earlier,) = pipeline.runs_of(job.id)
    pipeline.clock.advance(35 * 60)  # no tick until 13:05: 13:00 misfired
    pipeline.tick()
    _, last = pipeline.runs_of(job.id)
    assert (last.status, last.skip_reason) == (RunStatus.SKIPPED, SkipReason.MISFIRED)
    assert pipeline.run(earlier.id).status is RunStatus.QUEUED
    current = pipeline.services.queries.get_job("default", job.id)
    assert (current.state, current.next_run_at) == (JobState.ACTIVE, None)

    pipeline.drain()
    assert pipeline.run(earlier.id).status is RunStatus.SUCCEEDED
    assert pipeline.services.queries.get_job("default", job.id).state is JobState.COMPLETED


def test_a_one_shots_completion_looks_at_no_other_run(pipeline):
    """Its run is the job's only run of an occurrence (its claim counted it, and its message says so): its
    settling completes the job with one conditional write, and no Query of the job's runs."""
    job = _due(pipeline, payload={})
    pipeline.calls.clear()
    pipeline.drain()
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED  # type: ignore[union-attr]
    assert pipeline.calls.count("Query") == _freeze_queries(pipeline)  # the executor's read of the freezes alone


def _patch(**fields: Any):
    from tickwork.control.api_bodies import JobUpdate

    return JobUpdate.model_validate(fields)


# ---------------------------------------------------------------- 11. resume fires a burst


def test_resume_does_not_fire_occurrences_missed_while_paused_in_a_burst(pipeline):
    job = pipeline.create_job(schedule={"cron": "* * * * *", "start_at": START + timedelta(minutes=10)})
    pipeline.clock.advance(9 * 60)
    pipeline.services.jobs.pause("default", job.id)
    paused_at = pipeline.clock.now()
    pipeline.clock.advance(600)  # ten minutes, well within the 15-minute misfire grace
    pipeline.services.jobs.resume("default", job.id)
    resumed_at = pipeline.clock.now()
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    in_pause = [r for r in runs if paused_at <= r.scheduled_for < resumed_at]
    assert len(in_pause) == 9  # 12:10 .. 12:18
    assert {(r.status, r.skip_reason) for r in in_pause} == {(RunStatus.SKIPPED, SkipReason.PAUSED)}
    after = [r for r in runs if r.scheduled_for >= resumed_at]
    assert after
    assert all(r.status is RunStatus.QUEUED for r in after)


# ---------------------------------------------------------------- also: bounded catch-up, existing result wins


def test_catch_up_after_a_long_outage_builds_few_schedule_iterators(pipeline, monkeypatch):
    import croniter as croniter_module

    job = pipeline.create_job(schedule={"cron": "* * * * * *"})  # every second
    pipeline.clock.advance(6 * 3600)  # 21,600 missed occurrences
    built = {"n": 0}
    original_init = croniter_module.croniter.__init__

    def counting_init(self, *args: Any, **kwargs: Any) -> None:
        built["n"] += 1
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(croniter_module.croniter, "__init__", counting_init)
    pipeline.tick()
    assert built["n"] < 100
    runs = pipeline.runs_of(job.id)
    capped = [r for r in runs if r.skipped_count]
    assert capped
    assert sum(r.skipped_count or 1 for r in runs if r.status is RunStatus.SKIPPED) > 10_000


def test_taken_over_run_with_an_existing_result_records_it_even_while_paused(pipeline):
    job = _due(pipeline)
    (message,) = pipeline.receive(Band.NORMAL)
    run_id = json.loads(message["Body"])["run_id"]
    store = pipeline.services.store
    # Executor A leased the run and wrote its result, then died before recording it.
    lease = store.leases.lease_run(run_id, owner="a", now=pipeline.clock.now(), lease_for=timedelta(seconds=60))
    assert lease.run is not None
    pipeline.services.results.write_once(lease.run, {"done": "by a"})
    pipeline.services.jobs.pause("default", job.id)
    pipeline.clock.advance(120)  # A's lease has expired
    pipeline.deliver(Band.NORMAL, [message])
    run = pipeline.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.result is not None
    assert run_id_for(job.id, run.scheduled_for) == run_id
