"""Run events on EventBridge (docs/operations.md, "Run events") through the real tick and executor, on moto's
EventBridge: an ordinary rule on the default bus sends every `tickwork` event to a queue, which the test reads.

Events are at least once, each carrying an `event_id` derived from its fact; a crash between the fact's write and
the publish leaves the fact in the outbox, and the tick publishes it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from tickwork.faults import CrashPoint
from tickwork.model.states import JobState, RunStatus
from tickwork.store import run_key

from tests.faults.crashes import ProcessKilled
from tests.harness import START

FAR = timedelta(minutes=10)
OUTBOX_GRACE = timedelta(seconds=60)


class Consumer:
    """An EventBridge rule (source tickwork) on the default bus, delivering to an SQS queue."""

    def __init__(self, clients: Any) -> None:
        self.sqs = clients.client("sqs")
        events = clients.client("events")
        self.url = self.sqs.create_queue(QueueName="run-events-consumer")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="tickwork-runs", EventPattern=json.dumps({"source": ["tickwork"]}))
        events.put_targets(Rule="tickwork-runs", Targets=[{"Id": "queue", "Arn": arn}])
        self.seen: list[dict[str, Any]] = []

    def events(self) -> list[dict[str, Any]]:
        """Every event delivered so far."""
        while True:
            messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return self.seen
            for message in messages:
                self.seen.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])

    def kinds(self) -> list[str]:
        return sorted(event["detail-type"] for event in self.events())


@pytest.fixture
def consumer(pipeline):
    return Consumer(pipeline.services.clients)


def _failing_job(pipeline, **spec):
    return pipeline.create_job(
        schedule={"at": START + FAR}, payload={"fail_attempts": 9}, retry={"max_attempts": 1}, **spec
    )


def _failed_run(pipeline, **spec):
    """A one-shot job whose only run fails (one attempt), run through the tick and the executor."""
    job = _failing_job(pipeline, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    return job, run


def _in_due_index(pipeline, run_id: str) -> bool:
    item = pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key=run_key(run_id)
    )["Item"]
    return "due_at" in item or "events_pending" in item


def test_a_failed_run_publishes_run_failed_and_dead_lettered_once(pipeline, consumer):
    job, run = _failed_run(pipeline)

    events = consumer.events()
    assert sorted(e["detail-type"] for e in events) == ["Run Dead-Lettered", "Run Failed"]
    assert {e["source"] for e in events} == {"tickwork"}
    failed = next(e["detail"] for e in events if e["detail-type"] == "Run Failed")
    assert failed["event_id"] == f"{run.id}#run-failed#0"
    assert (failed["run_id"], failed["job_id"], failed["tenant"], failed["attempts"]) == (run.id, job.id, "default", 1)
    assert failed["error"] == {"type": "EchoFailure", "message": run.error.message}  # type: ignore[union-attr]
    dead = next(e["detail"] for e in events if e["detail-type"] == "Run Dead-Lettered")
    assert (dead["event_id"], dead["band"]) == (f"{run.id}#run-dead-lettered#0", "normal")
    # Published: out of the outbox, so later ticks publish nothing again.
    assert not _in_due_index(pipeline, run.id)
    pipeline.clock.advance(2 * OUTBOX_GRACE.total_seconds())
    pipeline.tick()
    assert len(consumer.events()) == 2


def test_a_run_failed_again_after_a_retry_is_a_new_fact_with_its_own_id(pipeline, consumer):
    _, run = _failed_run(pipeline)
    pipeline.services.redrive.retry_run("default", run.id)
    pipeline.drain()
    ids = sorted(e["detail"]["event_id"] for e in consumer.events() if e["detail-type"] == "Run Failed")
    assert ids == [f"{run.id}#run-failed#0", f"{run.id}#run-failed#1"]


def test_notify_chooses_the_events_a_job_emits(pipeline, consumer):
    quiet = _failing_job(pipeline, name="quiet", notify=[])
    only_failed = _failing_job(pipeline, name="only failed", notify=["Run Failed"])
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    events = consumer.events()
    assert [(e["detail-type"], e["detail"]["job_id"]) for e in events] == [("Run Failed", only_failed.id)]
    (quiet_run,) = pipeline.runs_of(quiet.id)
    assert quiet_run.status is RunStatus.FAILED
    assert not _in_due_index(pipeline, quiet_run.id)  # nothing to publish: never in the outbox


def test_a_crash_between_the_failure_and_its_publish_is_published_once_by_the_tick(pipeline, consumer):
    """The executor dies after the FAILED outcome's write, before publishing: nothing is published then; the run
    stays in the outbox, and the tick after the grace publishes both events, once (two ticks, then more)."""
    job = _failing_job(pipeline)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.crashes.arm(CrashPoint.EVENTS_BEFORE_PUBLISH)
    with pytest.raises(ProcessKilled):
        pipeline.drain()
    pipeline.crashes.disarm()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert consumer.events() == []
    assert _in_due_index(pipeline, run.id)

    pipeline.tick()  # within the grace: the writer may still be publishing
    assert consumer.events() == []
    pipeline.clock.advance(OUTBOX_GRACE.total_seconds() + 1)
    pipeline.tick()
    pipeline.tick()
    assert consumer.kinds() == ["Run Dead-Lettered", "Run Failed"]
    assert {e["detail"]["event_id"] for e in consumer.events()} == {
        f"{run.id}#run-failed#0",
        f"{run.id}#run-dead-lettered#0",
    }
    assert not _in_due_index(pipeline, run.id)
    pipeline.clock.advance(3 * OUTBOX_GRACE.total_seconds())
    pipeline.tick()
    assert len(consumer.events()) == 2


def test_a_job_suspended_by_its_breaker_is_published_and_recovered_when_eventbridge_refused(
    pipeline, consumer, monkeypatch
):
    """EventBridge down while the run fails and opens the breaker: every publish of the executor fails; the tick
    publishes Run Failed and Job Suspended from the run's outbox (the job's suspended_at is the run's end)."""
    job = pipeline.create_job(
        schedule={"cron": "*/5 * * * *"},
        payload={"fail_attempts": 9},
        retry={"max_attempts": 1},
        circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 600},
        notify=["Run Failed", "Job Suspended"],
    )
    bus = pipeline.services.run_events.bus
    real_publish = bus.publish

    def refused(events):
        raise RuntimeError("EventBridge unavailable")

    monkeypatch.setattr(bus, "publish", refused)
    pipeline.clock.advance(timedelta(minutes=5).total_seconds())
    pipeline.tick()
    pipeline.drain()
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.SUSPENDED  # type: ignore[union-attr]
    assert consumer.events() == []

    monkeypatch.setattr(bus, "publish", real_publish)
    pipeline.clock.advance(OUTBOX_GRACE.total_seconds() + 1)
    pipeline.tick()
    assert consumer.kinds() == ["Job Suspended", "Run Failed"]
    suspended = next(e["detail"] for e in consumer.events() if e["detail-type"] == "Job Suspended")
    assert suspended["job_id"] == job.id
    assert suspended["reason"] == "1 consecutive failed runs"
    assert suspended["event_id"].startswith(f"{job.id}#job-suspended#")


def test_a_job_suspended_by_its_breaker_is_published_by_the_executor(pipeline, consumer):
    job = pipeline.create_job(
        schedule={"cron": "*/5 * * * *"},
        payload={"fail_attempts": 9},
        retry={"max_attempts": 1},
        circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 600},
        notify=["Job Suspended"],
    )
    pipeline.clock.advance(timedelta(minutes=5).total_seconds())
    pipeline.tick()
    pipeline.drain()
    assert consumer.kinds() == ["Job Suspended"]
    assert consumer.events()[0]["detail"]["job_id"] == job.id
