"""SQS batch processing for the executor: Powertools' BatchProcessor, records run concurrently.

A batch of 10 runs due at the same second must start together, not one after another, so each record
gets its own thread (runs are I/O-bound: DynamoDB, S3, HTTP). Partial failures are reported per record.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel


class ConcurrentBatchProcessor(BatchProcessor):
    def __init__(self, *, max_workers: int = 10) -> None:
        # A batch whose every run is retrying is routine, not an invocation error: report the items,
        # don't raise (raising would count as a function error and trip the executor alarm).
        super().__init__(event_type=EventType.SQS, model=SqsRecordModel, raise_on_entire_batch_failure=False)
        self.max_workers = max_workers

    def process(self) -> list[tuple]:
        # Why an override: Powertools has no public API that runs a synchronous record handler on threads.
        # Its only concurrent processor, AsyncBatchProcessor, wants an async handler (and runs its own event
        # loop); the request for a threaded one (powertools-lambda-python#2500) was closed without it. So this
        # keeps to the smallest change: the records of `process()` are mapped onto a pool instead of a loop,
        # each through the same `_process_record` the base class calls, which does the per-record success
        # and failure bookkeeping (thread-safe: it appends to lists). One record runs inline, as the base does.
        if len(self.records) <= 1:
            return super().process()
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(self.records))) as pool:
            return list(pool.map(self._process_record, self.records))
