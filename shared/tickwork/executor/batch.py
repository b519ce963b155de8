"""SQS batch processing for the executor: a batch's records run concurrently, and each that is not done fails alone.

A batch of 10 runs due at the same second must start together, not one after another, so each record gets its own
thread (runs are I/O-bound: DynamoDB, S3, HTTP). The loop is Tickwork's own rather than Powertools' BatchProcessor:
importing Powertools' batch utility loads its parser's models of every event source (when pydantic is loaded, as
it always is here) and the data classes of Kinesis, DynamoDB streams and Kafka, about a third of an executor's
import (issue #39, docs/benchmarks.md section 11); and it has no threaded processor for a synchronous handler
(powertools-lambda-python#2500). What it reports is the same: a record that does not validate, whose handler
raises, or that is not done is a batch item failure (tickwork.model.sqs_records).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from tickwork.model.sqs_records import SqsRecord
from tickwork.observability import logger

RecordHandler = Callable[[SqsRecord], bool]  # whether the record is done (False: SQS delivers it again)


def failed_records(records: Sequence[SqsRecord], handler: RecordHandler, *, max_workers: int = 10) -> list[str]:
    """The ids of the records whose handler raised or said not done, in the records' order. One record runs
    inline; more run on up to `max_workers` threads."""

    def failed(record: SqsRecord) -> bool:
        try:
            return not handler(record)
        except Exception as error:  # one record's failure is its own: the batch's others are reported done
            logger.warning("batch record failed", extra={"message_id": record.messageId, "error": repr(error)[:2000]})
            return True

    if len(records) <= 1:
        outcomes = [failed(record) for record in records]
    else:
        with ThreadPoolExecutor(max_workers=min(max_workers, len(records))) as pool:
            outcomes = list(pool.map(failed, records))
    return [record.messageId for record, is_failed in zip(records, outcomes, strict=True) if is_failed]
