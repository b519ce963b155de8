"""SQS data access: the band queues and their dead-letter queues, and the dispatch queue of the fan-out.

A band's dead-letter queue holds the messages the executor could not process: one it cannot parse or that names
no run (sent there at once), and one whose receives ran out (SQS moves it, by the queue's RedrivePolicy). A run
out of attempts is not one of them: it is FAILED in the table (the API's DLQ), its message acknowledged.

The queues are standard queues used as SQS fair queues: every run message carries `MessageGroupId` = its
tenant, so that a tenant with many messages in flight does not hold back the others' (ordering and
exactly-once stay the run records' business, as on any standard queue)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from tickwork.model.messages import DispatchSlice, RunMessage
from tickwork.model.policies import Band, StartPrecision
from tickwork.model.run import Run
from tickwork.observability import logger

# What SQS answers when a receipt handle no longer names an in-flight message.
_RECEIPT_GONE = {
    "ReceiptHandleIsInvalid",
    "AWS.SimpleQueueService.ReceiptHandleIsInvalid",
    "InvalidParameterValue",
    "MessageNotInflight",
    "AWS.SimpleQueueService.MessageNotInflight",
}
MAX_DELAY_SECONDS = 900  # SQS's per-message DelaySeconds limit
BATCH = 10  # SQS's batch limit
MAX_REASON_CHARS = 2000  # an unprocessable message's reason, beside it on the dead-letter queue


@dataclass(frozen=True)
class Outgoing:
    message: RunMessage
    band: Band
    delay_seconds: int
    start_at: datetime | None = None  # when the executor may start it; the occurrence's time unless set

    @property
    def starts_at(self) -> datetime:
        return self.start_at or self.message.scheduled_for

    @classmethod
    def for_run(cls, run: Run, *, start_at: datetime | None = None) -> Outgoing:
        """A run's message to its band queue; it may start at `start_at`, or else at its scheduled time (the
        delay is set when it is sent). A precise run's first message says so: its executor waits for its time."""
        precise = run.start_precision is StartPrecision.PRECISE and start_at is None and run.attempts == 0
        message = RunMessage(
            run_id=run.id,
            job_id=run.job_id,
            tenant=run.tenant,
            scheduled_for=run.scheduled_for,
            precise=True if precise else None,
        )
        return cls(message=message, band=Band.of_priority(run.priority), delay_seconds=0, start_at=start_at)

    def timed(self, now: datetime) -> Outgoing:
        """This message with its delay set: the time left, at `now`, until it may start (never early; a precise
        run's a little early, which its executor waits out)."""
        left = (self.starts_at - now).total_seconds()
        delay = precise_delay_for(left) if self.message.precise else delay_for(left)
        return Outgoing(self.message, self.band, delay, self.start_at)


@dataclass
class SendReport:
    sent: list[str] = field(default_factory=list)  # run ids
    failed: list[str] = field(default_factory=list)


def delay_for(seconds_until_due: float) -> int:
    """DelaySeconds = ceil(max(0, scheduled_for - now)), capped by SQS: a run never starts early."""
    return min(MAX_DELAY_SECONDS, max(0, math.ceil(seconds_until_due)))


# A precise run's message is visible this much before its instant at least (SQS delays are whole seconds, so up
# to a second more): time for the event source to receive it and the executor to be ready, waiting.
PRECISE_LEAD_SECONDS = 0.25


def precise_delay_for(seconds_until_due: float) -> int:
    """A precise run's DelaySeconds: floor(time left - lead), so that it arrives 0.25-1.25 s early and the
    executor waits out the rest (its lease's not_before keeps it from starting early)."""
    return min(MAX_DELAY_SECONDS, max(0, math.floor(seconds_until_due - PRECISE_LEAD_SECONDS)))


class RunQueues:
    """Sends run messages to band queues in batches of 10. Takes its client; builds none."""

    def __init__(self, client: Any, queue_urls: dict[Band, str], dlq_urls: dict[Band, str]) -> None:
        self._sqs = client
        self.queue_urls = queue_urls
        self.dlq_urls = dlq_urls

    def send(self, outgoing: Sequence[Outgoing]) -> SendReport:
        """One SendMessageBatch per 10 messages of a band. Entries SQS refuses are reported, not raised."""
        report = SendReport()
        by_band: dict[Band, list[Outgoing]] = {}
        for item in outgoing:
            by_band.setdefault(item.band, []).append(item)
        for band, items in by_band.items():
            for chunk in _chunks(items, BATCH):
                entries = [
                    {
                        "Id": str(i),
                        "MessageBody": item.message.model_dump_json(exclude_none=True),
                        "DelaySeconds": item.delay_seconds,
                        # SQS fair queues: a standard queue whose messages name their tenant serves the other
                        # tenants first while one holds a disproportionate share of the in-flight messages.
                        "MessageGroupId": item.message.tenant,
                    }
                    for i, item in enumerate(chunk)
                ]
                response = self._sqs.send_message_batch(QueueUrl=self.queue_urls[band], Entries=entries)
                failed_ids = {f["Id"] for f in response.get("Failed", [])}
                for i, item in enumerate(chunk):
                    (report.failed if str(i) in failed_ids else report.sent).append(item.message.run_id)
        return report

    def waiting_messages(self, band: Band) -> int:
        """Messages of a band ready to be received and not yet taken: its backlog (approximate, as SQS says)."""
        attrs = self._sqs.get_queue_attributes(
            QueueUrl=self.queue_urls[band], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attrs.get("ApproximateNumberOfMessages", 0))

    def change_visibility(self, queue_url: str, receipt_handle: str, seconds: int) -> bool:
        """When the message comes back. False if SQS no longer holds it under this receipt (it was deleted, or
        another receive took it): nothing to change then, and the run's lease still guards it."""
        try:
            self._sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=max(0, min(43200, seconds))
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") not in _RECEIPT_GONE:
                raise
            logger.warning("message no longer held under this receipt; visibility unchanged")
            return False
        return True

    def change_visibility_batch(self, queue_url: str, receipts: dict[str, str], seconds: int) -> set[str]:
        """`change_visibility` for many messages of one queue (id -> receipt handle), ten to a request: the ids
        whose visibility was changed. An entry SQS refuses is left out, not raised: its caller changes it alone."""
        changed: set[str] = set()
        items = list(receipts.items())
        timeout = max(0, min(43200, seconds))
        for start in range(0, len(items), BATCH):
            chunk = items[start : start + BATCH]
            entries = [
                {"Id": str(i), "ReceiptHandle": receipt, "VisibilityTimeout": timeout}
                for i, (_, receipt) in enumerate(chunk)
            ]
            response = self._sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
            changed |= {chunk[int(ok["Id"])][0] for ok in response.get("Successful", [])}
        return changed

    def dead_letter_unprocessable(self, band: Band, body: str, reason: str) -> None:
        """A message the executor cannot process (it does not parse, or names no run) goes to the band's SQS
        dead-letter queue at once, rather than coming back until its receives are exhausted: its body as it came
        (so that a redrive, after a fix, brings it back as it was), the reason beside it."""
        self._sqs.send_message(
            QueueUrl=self.dlq_urls[band],
            MessageBody=body,
            MessageAttributes={"reason": {"DataType": "String", "StringValue": reason[:MAX_REASON_CHARS]}},
        )


class DispatchQueue:
    """Where the coordinator hands out a tick's shards (tickwork.tick.fanout): one message per dispatch worker."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._sqs, self.queue_url = client, queue_url

    def send_slices(self, slices: Sequence[DispatchSlice]) -> int:
        """One SendMessageBatch (at most ten slices); the number SQS accepted (the rest are logged)."""
        if not slices:
            return 0
        if len(slices) > BATCH:
            raise ValueError(f"at most {BATCH} slices per request, got {len(slices)}")
        answer = self._sqs.send_message_batch(
            QueueUrl=self.queue_url,
            Entries=[{"Id": str(s.worker), "MessageBody": s.model_dump_json()} for s in slices],
        )
        failed = answer.get("Failed", [])
        if failed:
            logger.warning("dispatch slices refused by SQS", extra={"failed": [f.get("Code") for f in failed]})
        return len(answer.get("Successful", []))


def _chunks(items: Sequence[Outgoing], size: int) -> Iterable[Sequence[Outgoing]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
