"""One emulator cost taken out of the timings, for the tick and the raw ceiling alike.

moto's SQS re-walks every message of a queue on each message sent (SendMessage reads the queue's attributes,
which count visible, delayed and in-flight messages), and each message's `visible`/`delayed` test builds
two datetimes. A tick sending 2,000 runs into one queue then spends most of its time in that walk (measured
here: a SendMessageBatch of 10 takes 0.15 s with 400 messages queued and 1.4 s with 2,000), which says
nothing about Tickwork or SQS. Within `fast_sqs_clock()` those two tests read `time.time()` instead:
the same instant (moto's clock is the wall clock), so behaviour is unchanged; the walk stays, but is ~10x
cheaper. Both the measured tick and moto's raw SendMessageBatch loop run under it, so their ratio is fair.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.core.botocore_stubber import BotocoreStubber
from moto.sqs.models import Message


@contextmanager
def fast_sqs_clock() -> Iterator[None]:
    original_visible: Any = Message.__dict__["visible"]
    original_delayed: Any = Message.__dict__["delayed"]

    def visible(self: Any) -> bool:
        return time.time() * 1000 > self.visible_at

    def delayed(self: Any) -> bool:
        return time.time() * 1000 < self.delayed_until

    Message.visible = property(visible)  # type: ignore[assignment,method-assign]
    Message.delayed = property(delayed)  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        Message.visible = original_visible  # type: ignore[method-assign]
        Message.delayed = original_delayed  # type: ignore[method-assign]


class MotoTime:
    """Seconds spent inside moto (its request handling, including the wait for the atomicity lock): what is
    left of a timed section is the client's own work, Tickwork's plus botocore's."""

    def __init__(self) -> None:
        self.seconds = 0.0

    @contextmanager
    def measuring(self) -> Iterator[MotoTime]:
        inner = BotocoreStubber.process_request
        meter = self

        def process_request(stub: Any, request: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(stub, request)
            finally:
                meter.seconds += time.perf_counter() - started

        BotocoreStubber.process_request = process_request  # type: ignore[method-assign]
        try:
            yield self
        finally:
            BotocoreStubber.process_request = inner  # type: ignore[method-assign]
