"""Executor: SQS delivers run messages in batches; each is run under a lease; failures are reported per item."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError
from tickwork.executor.batch import ConcurrentBatchProcessor
from tickwork.executor.run_executor import Delivery, Outcome
from tickwork.observability import observed
from tickwork.services import ServicesSlot


class RunNotFinished(Exception):
    """Reported as a batch item failure: SQS redelivers the message (after its backoff)."""


processor = ConcurrentBatchProcessor(max_workers=10)
_slot = ServicesSlot()
services = _slot.get  # the wiring, built on first use
use_services = _slot.set  # tests and the local runtime inject theirs


def _delivery(record: SqsRecordModel) -> Delivery:
    settings = services().settings
    band = settings.band_of_queue_arn_or_url(record.eventSourceARN)
    queue_url = settings.queue_url(band) if band else record.eventSourceARN
    return Delivery(
        body=record.body,
        message_id=record.messageId,
        receipt_handle=record.receiptHandle,
        queue_url=queue_url,
        band=band,
        receive_count=int(record.attributes.ApproximateReceiveCount),
    )


def _deliveries(event: dict[str, Any]) -> list[Delivery]:
    """The batch's records that parse; one that does not is left to the batch processor, which reports it."""
    deliveries = []
    for raw in (event.get("Records") if isinstance(event, dict) else None) or []:
        try:
            deliveries.append(_delivery(SqsRecordModel.model_validate(raw)))
        except (ValidationError, TypeError):
            continue
    return deliveries


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    held = {d.message_id: d for d in services().executor.hold_batch(_deliveries(event))}

    def record_handler(record: SqsRecordModel) -> str:
        delivery = held.get(record.messageId) or _delivery(record)
        outcome = services().executor.execute(delivery, context.get_remaining_time_in_millis)
        if outcome is not Outcome.DONE:
            raise RunNotFinished(outcome.value)
        return outcome.value

    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
