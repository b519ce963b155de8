"""Poll an SQS queue as Lambda's SQS event source mapping does, and invoke the function with each batch.

What the event source mapping does, and so what this does:
- long polls (ReceiveMessage with WaitTimeSeconds), up to the event's BatchSize messages at a time, with
  AttributeNames/MessageAttributeNames All, gathering up to MaximumBatchingWindowInSeconds when it is set;
- invokes the function synchronously with the SQS event built from the messages;
- with ReportBatchItemFailures, deletes the messages not listed in `batchItemFailures` (DeleteMessageBatch)
  and leaves the listed ones to their visibility timeout; a response naming an unknown, empty or null item
  fails the whole batch, as in AWS; without it, deletes all on success;
- an invocation that throws deletes nothing: the whole batch comes back after its visibility timeout;
- at most MaximumConcurrency invocations at a time.

Local detail, not AWS behaviour: plain moto re-checks a waiting long poll for messages whose delay or
visibility timeout has just ended only once a second (a send wakes it at once). The endpoint `tickwork dev`
starts wakes its long polls itself (tickwork_local.aws.motoserver); for any other endpoint (--attach), each queue
is polled by several lanes whose long polls are spread over the second (lane i re-checks at phase i/lanes),
so a delayed message is received within about 1/lanes of a second of becoming visible either way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tickwork_local.runtime.lambda_runtime import REGION, SqsEventSource, sqs_event

log = logging.getLogger("tickwork_local.runtime.poller")

SQS_BATCH = 10  # DeleteMessageBatch / ChangeMessageVisibilityBatch limit
PHASE_TOLERANCE = 0.1  # a lane this late for its phase polls at once rather than waiting a second
POLL_LANES = 5  # long polls per queue, at least
JOIN_POLL_SECONDS = 0.05  # how often a join looks again whether the lanes left are only waiting in a poll


@dataclass
class BatchOutcome:
    """What became of one invocation's batch (for the runtime's own log)."""

    band: str | None
    received: int
    deleted: int
    failed: int
    error: BaseException | None = None


@dataclass
class PollerStats:
    receives: int = 0
    messages: int = 0
    invocations: int = 0
    function_errors: int = 0
    deleted: int = 0
    left: int = 0
    released: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)


def failed_ids_from(response: Any, batch_ids: set[str]) -> set[str]:
    """The messages Lambda treats as failed for a ReportBatchItemFailures response: the listed ones, or the
    whole batch when the response is malformed or names an empty, null or unknown itemIdentifier."""
    if response is None:
        return set()
    if not isinstance(response, dict):
        return set(batch_ids)
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return set(batch_ids)
    failed: set[str] = set()
    for failure in failures:
        item = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(item, str) or not item or item not in batch_ids:
            return set(batch_ids)
        failed.add(item)
    return failed


class QueuePoller:
    """One event source mapping: lanes that long-poll `queue_url` and invoke `invoke` with SQS events."""

    def __init__(
        self,
        *,
        sqs: Any,
        queue_url: str,
        source: SqsEventSource,
        invoke: Callable[[dict[str, Any]], Any],
        concurrency: int,
        lanes: int | None = None,
        wait_seconds: int = 5,
        phase: float = 0.0,
        region: str = REGION,
        on_batch: Callable[[BatchOutcome], None] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.sqs = sqs
        self.queue_url = queue_url
        self.source = source
        self.invoke = invoke
        self.concurrency = concurrency
        self.lanes = max(lanes if lanes is not None else POLL_LANES, 1)
        self.wait_seconds = max(0, min(20, wait_seconds))
        self.phase = phase % 1.0
        self.region = region
        self.on_batch = on_batch
        self.stats = PollerStats()
        self._slots = threading.BoundedSemaphore(concurrency)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._held: dict[int, list[dict[str, Any]]] = {}  # lane -> messages received and not yet settled
        self._held_lock = threading.Lock()
        self._polling: set[int] = set()  # lanes waiting in a receive, holding no message

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        name = self.source.band or self.source.name
        for lane in range(self.lanes):
            thread = threading.Thread(target=self._lane, args=(lane,), name=f"esm-{name}-{lane}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop polling. Lanes finish their current long poll (at most `wait_seconds`) and invocation."""
        self._stop.set()

    def join(self, timeout: float, *, polls_too: bool = True) -> bool:
        """Wait until every lane has stopped; False if some are still busy at the deadline. Without `polls_too`, a
        lane still waiting in its long poll counts as stopped: it holds no message (for an endpoint that stops
        with this node, so that nothing it could still receive outlives it)."""
        deadline = time.monotonic() + timeout

        def busy(lane: int) -> bool:
            return self._threads[lane].is_alive() and (polls_too or lane not in self._polling)

        while any(busy(lane) for lane in range(len(self._threads))):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            lane = next(lane for lane in range(len(self._threads)) if busy(lane))
            self._threads[lane].join(min(left, JOIN_POLL_SECONDS))
        return True

    @property
    def in_flight(self) -> int:
        with self._held_lock:
            return sum(len(m) for m in self._held.values())

    def release_unfinished(self) -> int:
        """Make every message received and not yet settled visible again (ChangeMessageVisibility 0), so
        another consumer picks it up now rather than after its visibility timeout."""
        with self._held_lock:
            messages = [m for held in self._held.values() for m in held]
            self._held.clear()
        return self._release(messages)

    # ------------------------------------------------------------ a lane

    def _lane(self, lane: int) -> None:
        phase = (self.phase + lane / self.lanes) % 1.0
        more = False
        while not self._stop.is_set():
            if not more:
                self._wait_for_phase(phase)
                if self._stop.is_set():
                    return
            # A slot first, then the receive: as the event source mapping with MaximumConcurrency, a lane never
            # takes messages it cannot invoke with now. Held in a waiting lane they would be in flight for
            # nobody: later messages (another tenant's, which SQS fair queues serve first) would wait behind
            # them, and a node killed meanwhile would strand them for their visibility timeout.
            while not self._slots.acquire(timeout=0.2):
                if self._stop.is_set():
                    return
            try:
                more = self._poll_and_deliver(lane)
            finally:
                self._slots.release()

    def _poll_and_deliver(self, lane: int) -> bool:
        """One receive and, if it brought messages, one invocation; whether the batch came back full."""
        try:
            messages = self._receive(lane)
        except Exception as exc:
            if not self._stop.is_set():
                log.warning("ReceiveMessage on %s failed: %s", self.queue_url, exc)
                self._stop.wait(1.0)
            return False
        if not messages:
            return False
        with self._held_lock:
            self._held[lane] = messages
        delivered = False
        try:
            if self._stop.is_set():
                return False  # received after the stop: released below
            self._deliver(messages)
            delivered = True
        finally:
            with self._held_lock:
                still_held = self._held.pop(lane, None)  # None: release_unfinished() took them
            if still_held is not None and not delivered:
                self._release(still_held)
        return len(messages) >= self.source.batch_size

    def _wait_for_phase(self, phase: float) -> None:
        wait = (phase - time.time()) % 1.0
        if wait > 1.0 - PHASE_TOLERANCE:
            return  # just past this lane's phase: poll now
        self._stop.wait(wait)

    def _receive(self, lane: int) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MaxNumberOfMessages": min(SQS_BATCH, self.source.batch_size),
            "WaitTimeSeconds": self.wait_seconds,
            "AttributeNames": ["All"],
            "MessageAttributeNames": ["All"],
        }
        self._polling.add(lane)  # only while the first receive waits: once it brings messages, the lane holds them
        try:
            messages: list[dict[str, Any]] = self.sqs.receive_message(**kwargs).get("Messages", [])
        finally:
            self._polling.discard(lane)
        self.stats.add(receives=1, messages=len(messages))
        window = self.source.batching_window_seconds
        if messages and window > 0:
            # MaximumBatchingWindowInSeconds: gather until the batch is full or the window has passed.
            deadline = time.monotonic() + window
            while len(messages) < self.source.batch_size and not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                kwargs["MaxNumberOfMessages"] = min(SQS_BATCH, self.source.batch_size - len(messages))
                kwargs["WaitTimeSeconds"] = max(0, min(int(left), 20))
                more = self.sqs.receive_message(**kwargs).get("Messages", [])
                self.stats.add(receives=1, messages=len(more))
                messages += more
        return messages

    # ------------------------------------------------------------ invoking, and settling the batch

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        ids = {m["MessageId"] for m in messages}
        self.stats.add(invocations=1)
        try:
            response = self.invoke(sqs_event(messages, self.queue_url, self.region))
        except Exception as exc:
            # A function error: nothing is deleted; every message returns after its visibility timeout.
            self.stats.add(function_errors=1, left=len(messages))
            self._report(BatchOutcome(self.source.band, len(messages), 0, len(messages), exc))
            return
        failed = failed_ids_from(response, ids) if self.source.report_batch_item_failures else set()
        done = [m for m in messages if m["MessageId"] not in failed]
        deleted = self._delete(done)
        self.stats.add(deleted=deleted, left=len(failed))
        self._report(BatchOutcome(self.source.band, len(messages), deleted, len(failed)))

    def _report(self, outcome: BatchOutcome) -> None:
        if self.on_batch is not None:
            try:
                self.on_batch(outcome)
            except Exception:  # the runtime's own log must never break delivery
                log.exception("batch report failed")

    def _in_batches(
        self, action: Callable[..., Any], what: str, messages: list[dict[str, Any]], **entry: Any
    ) -> tuple[int, list[Any]]:
        """An SQS *Batch action on the messages' receipt handles, SQS_BATCH at a time, each entry with `entry`'s
        fields: how many succeeded, and the entries that failed. A call that fails is logged and skipped; its
        messages come back by themselves when their visibility ends."""
        succeeded, failed = 0, []
        for start in range(0, len(messages), SQS_BATCH):
            chunk = messages[start : start + SQS_BATCH]
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], **entry} for i, m in enumerate(chunk)]
            try:
                response = action(QueueUrl=self.queue_url, Entries=entries)
            except Exception as exc:
                log.warning("%s on %s failed: %s", what, self.queue_url, exc)
                continue
            succeeded += len(response.get("Successful", []))
            failed += response.get("Failed", [])
        return succeeded, failed

    def _delete(self, messages: list[dict[str, Any]]) -> int:
        deleted, failed = self._in_batches(self.sqs.delete_message_batch, "DeleteMessageBatch", messages)
        for failure in failed:
            log.warning("DeleteMessageBatch entry failed: %s", failure)
        return deleted

    def _release(self, messages: list[dict[str, Any]]) -> int:
        action = self.sqs.change_message_visibility_batch
        released, _ = self._in_batches(action, "releasing messages", messages, VisibilityTimeout=0)
        self.stats.add(released=released)
        return released
