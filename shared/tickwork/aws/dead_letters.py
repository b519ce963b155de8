"""SQS data access: the band queues' SQS dead-letter queues, what each holds, and their redrive.

A band's SQS dead-letter queue holds the messages the executor could not process (tickwork.aws.queues: one it
cannot parse or that names no run, or one whose receives ran out); FAILED runs are in the table, not there. Its
redrive is SQS's own message move task (StartMessageMoveTask), back to the band's queue, named as the destination:
a message the executor put there itself was never moved by the queue's RedrivePolicy, so SQS would not know where
it came from."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from tickwork.model.policies import Band

# What SQS answers StartMessageMoveTask while a task of the same source queue is still moving.
_TASK_RUNNING = {"UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation"}


@dataclass(frozen=True)
class MoveTask:
    """A dead-letter queue's latest message move task, as ListMessageMoveTasks says."""

    status: str  # RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED
    moved: int
    to_move: int
    started_at: datetime
    failure: str | None = None


@dataclass(frozen=True)
class DeadLetterQueue:
    band: Band
    messages: int  # ready to be received (approximate, as SQS says)
    in_flight: int  # received and not yet deleted (someone is reading them)
    last_redrive: MoveTask | None


class RedriveRunning(Exception):
    """A message move task of this queue is still moving its messages: SQS allows one at a time. `maybe_ours`: SQS
    said so to a retry of the start (the SDK's, after a timeout), whose first send may have started that task."""

    def __init__(self, band: str, *, maybe_ours: bool = False) -> None:
        super().__init__(band)
        self.maybe_ours = maybe_ours


class MoveRefused(Exception):
    """SQS answered the start with an error (a denied grant, a missing queue, throttling past the retries): no task
    was started by it."""


class DeadLetterQueues:
    """The band queues' SQS dead-letter queues. Takes its client; builds none."""

    def __init__(self, client: Any, queue_urls: dict[Band, str], dlq_urls: dict[Band, str]) -> None:
        self._sqs = client
        self.queue_urls = queue_urls
        self.dlq_urls = dlq_urls

    def _attributes(self, url: str, *names: str) -> dict[str, str]:
        answer: dict[str, str] = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))["Attributes"]
        return answer

    def _tasks(self, source_arn: str, most: int) -> list[MoveTask]:
        """The queue's latest message move tasks, newest first (ListMessageMoveTasks: at most 10, of 14 days)."""
        listed = self._sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=most).get("Results", [])
        return [_move_task(entry) for entry in listed]

    def read(self, band: Band) -> DeadLetterQueue:
        """What the band's dead-letter queue holds, and its latest redrive (None: never redriven, or not within
        the 14 days SQS lists a task for)."""
        attrs = self._attributes(
            self.dlq_urls[band], "QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"
        )
        tasks = self._tasks(attrs["QueueArn"], 1)
        return DeadLetterQueue(
            band=band,
            messages=int(attrs.get("ApproximateNumberOfMessages", 0)),
            in_flight=int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0)),
            last_redrive=tasks[0] if tasks else None,
        )

    def moves_started(self, band: Band) -> list[datetime]:
        """When the band's dead-letter queue's latest move tasks started (up to 10, newest first)."""
        source = self._attributes(self.dlq_urls[band], "QueueArn")["QueueArn"]
        return [task.started_at for task in self._tasks(source, 10)]

    def redrive(self, band: Band) -> None:
        """Start moving the band's dead-letter queue's messages back to the band's queue (SQS's message move task,
        asynchronous). RedriveRunning if one is moving them still; MoveRefused if SQS answered another error. Any
        other exception (a timeout past the SDK's retries) leaves unknown whether the task started."""
        source = self._attributes(self.dlq_urls[band], "QueueArn")["QueueArn"]
        destination = self._attributes(self.queue_urls[band], "QueueArn")["QueueArn"]
        try:
            self._sqs.start_message_move_task(SourceArn=source, DestinationArn=destination)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in _TASK_RUNNING:
                retried = exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) > 0
                raise RedriveRunning(band.value, maybe_ours=retried) from exc
            raise MoveRefused(f"SQS refused to redrive {band.value}: {exc}") from exc


def _move_task(entry: dict[str, Any]) -> MoveTask:
    started = entry.get("StartedTimestamp", 0)
    return MoveTask(
        status=entry.get("Status", "COMPLETED"),
        moved=int(entry.get("ApproximateNumberOfMessagesMoved", 0)),
        to_move=int(entry.get("ApproximateNumberOfMessagesToMove", 0)),
        started_at=datetime.fromtimestamp(int(started) / 1000, tz=UTC),
        failure=entry.get("FailureReason"),
    )
