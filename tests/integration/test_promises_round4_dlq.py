"""Issue 34, defect 11: one dead-letter model. A run out of attempts is FAILED in the table (the API's DLQ, retried
and redriven there) and its message is acknowledged; a band's SQS dead-letter queue holds only the messages the
executor could not process (poison, or receives exhausted), and has a redrive of its own (SQS's message move task).

Real tick and executor against moto, on a fake clock."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from tickwork.faults import CrashPoint
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus

from tests.faults.crashes import ProcessKilled
from tests.harness import START
from tests.testing_jobtypes import EXECUTIONS as COUNTED

FAR = timedelta(minutes=10)
EXECUTIONS: Counter[str] = Counter()  # each run's handler calls


class _Payload(BaseModel):
    model_config = ConfigDict(extra="allow")


class AlwaysFails(RuntimeError):
    pass


if "always-fails" not in registry:

    @job_type("always-fails", _Payload)
    def always_fails(payload: _Payload, ctx: RunContext) -> dict[str, Any]:
        EXECUTIONS[ctx.run_id] += 1
        raise AlwaysFails(f"attempt {ctx.attempt} fails")


def _failing_jobs(pipeline, count: int, **spec):
    return [
        pipeline.create_job(
            name=f"failing {i}",
            type="always-fails",
            schedule={"at": START + FAR},
            **{"retry": {"max_attempts": 2}, **spec},
        )
        for i in range(count)
    ]


def _sqs_dead_letters(pipeline, band: Band) -> int:
    attrs = pipeline.sqs.get_queue_attributes(
        QueueUrl=pipeline.resources.dlq_urls[band.value],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attrs.values())


def test_failed_run_does_not_also_land_in_the_sqs_dead_letter_queue(pipeline):
    jobs = _failing_jobs(pipeline, 3)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()

    failed = pipeline.services.queries.list_dlq("default").items
    assert sorted(r.job_id for r in failed) == sorted(j.id for j in jobs)
    assert all(r.status is RunStatus.FAILED and r.attempts == 2 for r in failed)
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 0  # acknowledged, not copied to the band's SQS DLQ
    assert sum(pipeline.queued_messages(b) for b in Band) == 0

    # Redriven from the API's DLQ, and failing again: still FAILED in the table only.
    report = pipeline.services.redrive.redrive("default")
    assert report.redriven == 3
    pipeline.drain()
    assert len(pipeline.services.queries.list_dlq("default").items) == 3
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 0


def test_a_duplicate_delivery_of_the_final_failing_attempt_neither_runs_nor_dead_letters(pipeline):
    """The last attempt's message delivered twice (SQS is at least once): the second finds the run FAILED, and is
    acknowledged without running it or putting anything on the SQS DLQ."""
    (job,) = _failing_jobs(pipeline, 1)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [message])  # attempt 1: retrying, the message back after its backoff
    (run,) = pipeline.runs_of(job.id)
    pipeline.clock.advance((run.not_before - pipeline.clock.now()).total_seconds() + 1)  # type: ignore[operator]
    url = pipeline.resources.queue_urls["normal"]
    pipeline.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    (final,) = pipeline.receive(Band.NORMAL)
    duplicate = dict(final)
    assert pipeline.deliver(Band.NORMAL, [final]) == set()  # attempt 2: FAILED, acknowledged
    executions = EXECUTIONS[run.id]

    assert pipeline.deliver(Band.NORMAL, [duplicate]) == set()  # the same message again: acknowledged
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, 2)
    assert EXECUTIONS[run.id] == executions
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 0


def test_a_crash_between_recording_failed_and_the_acknowledgement_does_not_run_it_again(pipeline):
    """The executor dies after the FAILED write, before its message is acknowledged: the message comes back, finds
    the run FAILED (on record, in the API's DLQ), and is acknowledged: not run again, nothing on the SQS DLQ."""
    (job,) = _failing_jobs(pipeline, 1, retry={"max_attempts": 1})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    pipeline.crashes.arm(CrashPoint.EVENTS_BEFORE_PUBLISH)  # passed right after the FAILED outcome's write
    with pytest.raises(ProcessKilled):
        pipeline.deliver(Band.NORMAL, [message])
    pipeline.crashes.disarm()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    executions = EXECUTIONS[run.id]

    # The message was never acknowledged: it comes back when its visibility ends.
    url = pipeline.resources.queue_urls["normal"]
    pipeline.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    (again,) = pipeline.receive(Band.NORMAL)
    assert pipeline.deliver(Band.NORMAL, [again]) == set()
    assert EXECUTIONS[run.id] == executions
    assert [r.id for r in pipeline.services.queries.list_dlq("default").items] == [run.id]
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 0
    assert sum(pipeline.queued_messages(b) for b in Band) == 0


def test_a_poison_message_still_reaches_the_sqs_dead_letter_queue(pipeline):
    url = pipeline.resources.queue_urls["high"]
    pipeline.sqs.send_message(QueueUrl=url, MessageBody="not json at all")
    (message,) = pipeline.receive(Band.HIGH)
    assert pipeline.deliver(Band.HIGH, [message]) == set()
    (letter,) = pipeline.sqs.receive_message(
        QueueUrl=pipeline.resources.dlq_urls["high"], MessageAttributeNames=["All"], WaitTimeSeconds=0
    )["Messages"]
    assert letter["Body"] == "not json at all"  # as it came: a redrive after a fix brings it back as it was
    assert letter["MessageAttributes"]["reason"]["StringValue"].startswith("malformed message")


def _exhaust_receives(pipeline, band: Band) -> dict:
    """The band's one message received as often as its queue's maxReceiveCount allows and never acknowledged (an
    executor dying at each receive), then received once more: SQS moves it to the band's SQS DLQ."""
    url = pipeline.resources.queue_urls[band.value]
    attrs = pipeline.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])["Attributes"]
    max_receives = json.loads(attrs["RedrivePolicy"])["maxReceiveCount"]
    assert max_receives == 120  # the template's MaxReceiveCount
    for _ in range(max_receives):
        (message,) = pipeline.receive(band)
        pipeline.sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
    assert pipeline.receive(band) == []
    return message


def test_a_message_whose_receives_ran_out_is_on_the_sqs_dlq_and_its_run_is_not_forgotten(pipeline):
    """SQS moves the message to the band's SQS DLQ; the run it carried is still QUEUED in the due index, and the
    tick re-sends it (tickwork.tick.resender): it runs, once."""
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    _exhaust_receives(pipeline, Band.NORMAL)
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 1
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.QUEUED

    pipeline.clock.advance(60)  # past its re-send time (REDISPATCH_AFTER_SECONDS, 30 s here)
    assert pipeline.tick()["redispatched"] == 1
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert COUNTED[run.id] == 1


def test_a_redrive_of_the_sqs_dlq_moves_its_messages_back_and_a_finished_run_is_not_run_again(pipeline):
    """The SQS DLQ's redrive (SQS's message move task, back to the band's queue): the message of a run that ran
    since is acknowledged without running it, and a poison message goes back to the SQS DLQ."""
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    _exhaust_receives(pipeline, Band.NORMAL)
    pipeline.clock.advance(60)
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, COUNTED[run.id]) == (RunStatus.SUCCEEDED, 1)
    pipeline.sqs.send_message(QueueUrl=pipeline.resources.dlq_urls["normal"], MessageBody="poison")
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 2

    report = pipeline.services.dead_letters.redrive([Band.NORMAL])
    assert report.started == [Band.NORMAL]
    assert _sqs_dead_letters(pipeline, Band.NORMAL) == 0
    assert pipeline.queued_messages(Band.NORMAL) == 2
    (normal,) = [q for q in pipeline.services.dead_letters.queues_now().items if q.band is Band.NORMAL]
    assert normal.last_redrive is not None
    assert (normal.last_redrive.status, normal.last_redrive.moved) == ("COMPLETED", 2)

    pipeline.drain()
    assert COUNTED[run.id] == 1  # its message back: a duplicate of a finished run, acknowledged
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED
    assert [m["Body"] for m in pipeline.dlq_messages(Band.NORMAL)] == ["poison"]  # still not processable
