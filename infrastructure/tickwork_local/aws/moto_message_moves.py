"""Play SQS's message move tasks in moto, which has none (moto 5.2 answers StartMessageMoveTask with an error).

Tickwork redrives a band's SQS dead-letter queue with StartMessageMoveTask back to the band's queue
(tickwork.aws.dead_letters), and reads the task with ListMessageMoveTasks. This adds the three operations to moto's
SQS, as AWS documents them (API Reference, StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask):
- the source must be a queue another queue names as its dead-letter queue (InvalidParameterValue otherwise), the
  destination, if named, an existing queue (ResourceNotFoundException); without one, the messages go back to the
  queue that dead-lettered them, which is known here only when exactly one queue names the source;
- one active task per source queue (UnsupportedOperation for a second);
- a moved message is a new message in its destination: same body, attributes and group, its receive count
  starting again;
- ListMessageMoveTasks answers the source's tasks newest first (MaxResults 1 to 10, default 1), with a TaskHandle
  only for a RUNNING one.
What differs: AWS moves the messages asynchronously, at up to MaxNumberOfMessagesPerSecond; here the task moves
every visible message of the source within its StartMessageMoveTask call, and is COMPLETED when that answers.

Like moto_atomic, this changes no AWS API; the local moto server applies it in `motoserver._prepare_moto`, and the
in-process fixture (tests/conftest.py) with `message_moves_in_process`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from moto.core.responses import ActionResult
from moto.core.utils import unix_time_millis
from moto.sqs.exceptions import InvalidParameterValue, SQSException
from moto.sqs.models import Message, Queue, SQSBackend
from moto.sqs.responses import SQSResponse

MAX_RATE = 500  # MaxNumberOfMessagesPerSecond's ceiling
_LOCK = threading.Lock()


@dataclass
class MoveTask:
    handle: str
    source_arn: str
    destination_arn: str | None
    rate: int | None
    started_ms: int
    to_move: int = 0
    moved: int = 0
    status: str = "RUNNING"
    failure: str | None = None

    def entry(self) -> dict[str, Any]:
        """As ListMessageMoveTasks answers it."""
        entry: dict[str, Any] = {
            "Status": self.status,
            "SourceArn": self.source_arn,
            "ApproximateNumberOfMessagesMoved": self.moved,
            "ApproximateNumberOfMessagesToMove": self.to_move,
            "StartedTimestamp": self.started_ms,
        }
        if self.status == "RUNNING":
            entry["TaskHandle"] = self.handle
        if self.destination_arn is not None:
            entry["DestinationArn"] = self.destination_arn
        if self.rate is not None:
            entry["MaxNumberOfMessagesPerSecond"] = self.rate
        if self.failure is not None:
            entry["FailureReason"] = self.failure
        return entry


@dataclass
class _Tasks:
    by_source: dict[str, list[MoveTask]] = field(default_factory=dict)  # oldest first


def _tasks(backend: SQSBackend) -> _Tasks:
    tasks = getattr(backend, "_tickwork_move_tasks", None)
    if tasks is None:
        tasks = _Tasks()
        backend._tickwork_move_tasks = tasks  # type: ignore[attr-defined]
    return tasks


class ResourceNotFound(SQSException):
    def __init__(self, message: str) -> None:
        super().__init__("ResourceNotFoundException", message)


class UnsupportedOperation(SQSException):
    def __init__(self, message: str) -> None:
        super().__init__("UnsupportedOperation", message)


def _queue_of_arn(backend: SQSBackend, arn: str) -> Queue:
    for queue in backend.queues.values():
        if queue.queue_arn == arn:
            return queue
    raise ResourceNotFound(f"The resource that you specified for the SourceArn parameter doesn't exist: {arn}")


def _moved_copy(message: Message) -> Message:
    moved = Message(str(uuid.uuid4()), message.body)
    moved.message_attributes = dict(message.message_attributes)
    moved.group_id = message.group_id
    moved.mark_sent()
    return moved


def start_message_move_task(self: SQSResponse) -> ActionResult:
    backend = self.sqs_backend
    source_arn = self._get_param("SourceArn")
    destination_arn = self._get_param("DestinationArn")
    rate = self._get_param("MaxNumberOfMessagesPerSecond")
    if rate is not None and not 1 <= int(rate) <= MAX_RATE:
        raise InvalidParameterValue(f"MaxNumberOfMessagesPerSecond must be from 1 to {MAX_RATE}")
    with _LOCK:
        source = _queue_of_arn(backend, source_arn)
        feeders = backend.list_dead_letter_source_queues(source.name)
        if not feeders:
            raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
        destination = _queue_of_arn(backend, destination_arn) if destination_arn else None
        tasks = _tasks(backend).by_source.setdefault(source_arn, [])
        if any(task.status == "RUNNING" for task in tasks):
            raise UnsupportedOperation(
                "There is already a task running. Only one active task is allowed for a source queue arn at a "
                "given time."
            )
        task = MoveTask(str(uuid.uuid4()), source_arn, destination_arn, rate, int(unix_time_millis()))
        tasks.append(task)
        if destination is None and len(feeders) != 1:
            task.status, task.failure = "FAILED", "the messages' source queues are not known: name a DestinationArn"
        else:
            to = destination or feeders[0]
            waiting = [m for m in source._messages if m.visible and not m.delayed and m not in source.pending_messages]
            task.to_move = len(waiting)
            for message in waiting:
                source._messages.remove(message)
                to.add_message(_moved_copy(message))
                task.moved += 1
            task.status = "COMPLETED"
    return ActionResult({"TaskHandle": task.handle})


def list_message_move_tasks(self: SQSResponse) -> ActionResult:
    backend = self.sqs_backend
    source_arn = self._get_param("SourceArn")
    most = int(self._get_param("MaxResults") or 1)
    if not 1 <= most <= 10:
        raise InvalidParameterValue("MaxResults must be from 1 to 10")
    with _LOCK:
        _queue_of_arn(backend, source_arn)
        tasks = list(reversed(_tasks(backend).by_source.get(source_arn, [])))[:most]
        return ActionResult({"Results": [task.entry() for task in tasks]})


def cancel_message_move_task(self: SQSResponse) -> ActionResult:
    handle = self._get_param("TaskHandle")
    with _LOCK:
        for tasks in _tasks(self.sqs_backend).by_source.values():
            for task in tasks:
                if task.handle == handle and task.status == "RUNNING":
                    task.status = "CANCELLED"
                    return ActionResult({"ApproximateNumberOfMessagesMoved": task.moved})
    raise ResourceNotFound(f"No running message move task with handle {handle}")


_OPERATIONS = {
    "start_message_move_task": start_message_move_task,
    "list_message_move_tasks": list_message_move_tasks,
    "cancel_message_move_task": cancel_message_move_task,
}


def play_message_move_tasks() -> None:
    """The three operations in moto's SQS. Idempotent."""
    for name, operation in _OPERATIONS.items():
        setattr(SQSResponse, name, operation)


def no_message_move_tasks() -> None:
    """Undo `play_message_move_tasks`: moto's SQS as it is."""
    for name in _OPERATIONS:
        if name in vars(SQSResponse):
            delattr(SQSResponse, name)


@contextmanager
def message_moves_in_process() -> Iterator[None]:
    """For `mock_aws` (in-process): message move tasks while the block runs."""
    already = vars(SQSResponse).get("start_message_move_task") is start_message_move_task  # a local server's
    play_message_move_tasks()
    try:
        yield
    finally:
        if not already:
            no_message_move_tasks()
