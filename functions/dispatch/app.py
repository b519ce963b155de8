"""Dispatch worker: the fan-out's worker (DispatchWorkers > 1). SQS delivers one slice of a tick's shards; the
worker claims what is due in them and sends it to the band queues, exactly as the single tick does."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Json
from tickwork.model.messages import DispatchSlice
from tickwork.observability import logger, metrics, observed
from tickwork.services import ServicesSlot


class DispatchSliceRecord(SqsRecordModel):
    """A dispatch queue message: its body is a `DispatchSlice`. A body that is not one fails the record (it goes
    to TickDeadLetterQueue on its next receive: the queue's maxReceiveCount is 1), and claims nothing."""

    body: Json[DispatchSlice]  # type: ignore[assignment]


# A failed slice is reported as the item's failure, not raised: it is not retried either way (the next tick's slices
# cover its shards), and TickDeadLetterQueue's alarm reports it.
processor = BatchProcessor(event_type=EventType.SQS, model=DispatchSliceRecord, raise_on_entire_batch_failure=False)
_slot = ServicesSlot()
services = _slot.get  # the wiring, built on first use
use_services = _slot.set  # tests and the local runtime inject theirs


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    dispatcher = services().dispatcher  # built here, not per record: a wiring that cannot start fails the invocation

    def record_handler(record: DispatchSliceRecord) -> dict[str, int]:
        work = record.body
        logger.append_keys(worker=work.worker, workers=work.workers)
        report = dispatcher.claim_slice(work)
        return {"dispatched": report.dispatched, "stale_slices": report.stale_slices}

    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    for _, error, _ in processor.exceptions:  # a malformed slice names its field (pydantic's message)
        logger.error("dispatch slice failed", extra={"error": str(error)[:2000]})
        metrics.add_metric(name="DispatchSlicesFailed", unit="Count", value=1)
    return response
