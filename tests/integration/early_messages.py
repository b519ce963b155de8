"""Delivering a run's message before its time, as a duplicate (or one whose delay hit SQS's cap) would arrive."""

from __future__ import annotations

from typing import Any

from tickwork.model.messages import RunMessage
from tickwork.model.run import Run


def deliver_now(pipeline: Any, run: Run) -> list[dict[str, Any]]:
    """Send the run's message with no delay, receive it and hand it to the executor; the messages, for another
    delivery later (moto's SQS delays are real time, so a delayed one could not be received in a test)."""
    message = RunMessage(run_id=run.id, job_id=run.job_id, tenant=run.tenant, scheduled_for=run.scheduled_for)
    pipeline.sqs.send_message(
        QueueUrl=pipeline.resources.queue_urls[run.band.value], MessageBody=message.model_dump_json()
    )
    messages: list[dict[str, Any]] = pipeline.receive(run.band)
    pipeline.deliver(run.band, messages)
    return messages
