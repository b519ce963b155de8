"""Executor: SQS delivers run messages in batches; each is run under a lease; failures are reported per item. The
tick's warming invocations before a burst build the environment and run nothing."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from tickwork.executor.batch import failed_records
from tickwork.executor.run_executor import Delivery, Outcome
from tickwork.executor.warm import warm_environment
from tickwork.model.sqs_records import SqsRecord, partial_batch_response, sqs_batch
from tickwork.model.warmup import WarmEvent
from tickwork.observability import observed
from tickwork.services import ServicesSlot

MAX_WORKERS = 10  # a batch's records run together (the event source mapping's BatchSize is at most 10)
_slot = ServicesSlot()
services = _slot.get  # the wiring, built on first use
use_services = _slot.set  # tests and the local runtime inject theirs


def _delivery(record: SqsRecord) -> Delivery:
    settings = services().settings
    band = settings.band_of_queue_arn_or_url(record.eventSourceARN)
    queue_url = settings.queue_url(band) if band else record.eventSourceARN
    return Delivery(
        body=record.body,
        message_id=record.messageId,
        receipt_handle=record.receiptHandle,
        queue_url=queue_url,
        band=band,
        receive_count=record.attributes.ApproximateReceiveCount,
    )


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    warm = WarmEvent.of(event)
    if warm is not None:  # the tick's warming invocation before a burst: nothing to run
        return warm_environment(lambda: services().executor, services().clock, warm.tickwork_warm)
    batch = sqs_batch(event)  # a record that does not validate fails alone
    held = {d.message_id: d for d in services().executor.hold_batch([_delivery(r) for r in batch.records])}

    def run(record: SqsRecord) -> bool:
        delivery = held.get(record.messageId) or _delivery(record)
        return services().executor.execute(delivery, context.get_remaining_time_in_millis) is Outcome.DONE

    failed = failed_records(batch.records, run, max_workers=MAX_WORKERS)
    return partial_batch_response([*batch.malformed, *failed])
