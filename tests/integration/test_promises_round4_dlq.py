"""Issue 34, defect 11: one dead-letter model. A run out of attempts is FAILED in the table (the API's DLQ, retried
and redriven there) and its message is acknowledged; a band's SQS dead-letter queue holds only the messages the
executor could not process (poison, or receives exhausted), and has a redrive of its own (SQS's message move task).

Real tick and executor against moto, on a fake clock."""

from __future__ import annotations

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
