"""Make moto keep DynamoDB's (and SQS's) per-request atomicity, and serve SQS fair queues as SQS does.

DynamoDB promises that a conditional write is atomic: of two writers racing on `attribute_not_exists`,
exactly one wins. moto evaluates the condition and then writes without any lock, so two threads can both
pass the same condition (measured here: 8 racing ticks over 500 jobs produced 502 claims). Tickwork's
claims and leases are built on that atomicity, so the local emulator is made to honour it: moto serves
one request at a time. It holds the GIL throughout a request anyway, so little throughput is lost.

This changes no behaviour of any AWS API; it removes a race that exists only in the emulator. The moto
server of the local runtime gets the same treatment in `tickwork_local.aws.motoserver`.

SQS fair queues: on a standard queue whose messages carry a MessageGroupId (Tickwork's run messages name their
tenant), SQS returns the messages of other groups first while one group holds a disproportionate share of the
in-flight messages. moto ignores the group on a standard queue and returns the oldest first, so one tenant's
flood would hold every other tenant's runs back behind it. `play_fair_queues` makes moto's receive order
the visible messages by (the group's in-flight messages + the message's place among its group's visible ones),
stably: a group with nothing in flight interleaves with the others, and one with many in flight waits until the
others have caught up. FIFO queues keep moto's own rules.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.core.botocore_stubber import BotocoreStubber
from moto.sqs.models import Queue, SQSBackend

from tickwork_local.aws.moto_transactions import (
    moto_transaction_backups,
    roll_back_transactions_by_item,
    transactions_roll_back_by_item,
)

_LOCK = threading.RLock()
_MOTO_VISIBLE_MESSAGES = Queue.messages  # moto's own property: the visible messages, oldest first
_MOTO_RECEIVE = SQSBackend.receive_message
_receiving = threading.local()  # only a receive's own walk of the queue is put in fair order


def fair_order(messages: list[Any], in_flight: Counter[Any]) -> list[Any]:
    """Visible messages in the order a fair queue serves them: by (in-flight messages of the message's group +
    its place among its group's visible messages), ties by age. One pass and one sort (O(n log n)); a queue
    whose messages share one group keeps its order untouched."""
    groups = {m.group_id for m in messages}
    if len(groups) < 2:
        return messages
    seen: Counter[Any] = Counter()
    keyed = []
    for age, message in enumerate(messages):
        group = message.group_id
        keyed.append((in_flight[group] + seen[group], age, message))
        seen[group] += 1
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [message for _, _, message in keyed]


def _fair_visible_messages(queue: Any) -> list[Any]:
    visible = _MOTO_VISIBLE_MESSAGES.fget(queue)  # type: ignore[attr-defined]
    # Counting (GetQueueAttributes) and a long poll's wake-up test need no order: only a receive pays for it.
    if not getattr(_receiving, "active", False) or queue.fifo_queue or len(visible) < 2:
        return visible  # type: ignore[no-any-return]
    # moto keeps a received message in _pending_messages until it is deleted, visible again or not. A
    # snapshot (copied at once under the GIL), so a request the lock lets through meanwhile cannot upset it.
    in_flight = Counter(m.group_id for m in list(queue._pending_messages) if not m.visible)
    return fair_order(visible, in_flight)


def _fair_receive(self: Any, *args: Any, **kwargs: Any) -> Any:
    _receiving.active = True
    try:
        return _MOTO_RECEIVE(self, *args, **kwargs)
    finally:
        _receiving.active = False


def play_fair_queues() -> None:
    """Make moto's SQS receive serve standard queues as SQS fair queues (see above). Idempotent; it runs under
    whatever lock serves the request (the caller's), so the in-flight counts it reads are the receive's own."""
    Queue.messages = property(_fair_visible_messages)  # type: ignore[method-assign,assignment]
    SQSBackend.receive_message = _fair_receive  # type: ignore[method-assign]


def moto_queue_order() -> None:
    """Undo `play_fair_queues`: moto's own order (oldest first)."""
    Queue.messages = _MOTO_VISIBLE_MESSAGES  # type: ignore[method-assign]
    SQSBackend.receive_message = _MOTO_RECEIVE  # type: ignore[method-assign]


@contextmanager
def atomic_requests_in_process() -> Iterator[None]:
    """For `mock_aws` (in-process): each intercepted request is handled under one lock, standard queues are
    served as fair queues, and a cancelled transaction is undone by its items."""
    original = BotocoreStubber.process_request

    def process_request(self: BotocoreStubber, request: Any) -> Any:
        with _LOCK:
            return original(self, request)

    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]
    already_fair = SQSBackend.receive_message is _fair_receive  # a local moto server in this process plays it
    already_by_item = transactions_roll_back_by_item()
    play_fair_queues()
    roll_back_transactions_by_item()  # tickwork_local.aws.moto_transactions: no table copied per transaction
    try:
        yield
    finally:
        if not already_fair:
            moto_queue_order()
        if not already_by_item:
            moto_transaction_backups()
        BotocoreStubber.process_request = original  # type: ignore[method-assign]
