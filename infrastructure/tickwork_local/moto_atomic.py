"""Make moto keep DynamoDB's (and SQS's) per-request atomicity.

DynamoDB promises that a conditional write is atomic: of two writers racing on `attribute_not_exists`,
exactly one wins. moto evaluates the condition and then writes without any lock, so two threads can both
pass the same condition (measured here: 8 racing ticks over 500 jobs produced 502 claims). Tickwork's
claims and leases are built on that atomicity, so the local emulator is made to honour it: moto serves
one request at a time. It holds the GIL throughout a request anyway, so little throughput is lost.

This changes no behaviour of any AWS API; it removes a race that exists only in the emulator. The moto
server of the local runtime gets the same treatment in `tickwork_local.motoserver`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.core.botocore_stubber import BotocoreStubber

_LOCK = threading.RLock()


@contextmanager
def atomic_requests_in_process() -> Iterator[None]:
    """For `mock_aws` (in-process): each intercepted request is handled under one lock."""
    original = BotocoreStubber.process_request

    def process_request(self: BotocoreStubber, request: Any) -> Any:
        with _LOCK:
            return original(self, request)

    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]
    try:
        yield
    finally:
        BotocoreStubber.process_request = original  # type: ignore[method-assign]
