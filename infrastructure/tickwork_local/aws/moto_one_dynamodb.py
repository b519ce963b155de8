"""One DynamoDB for every region of a moto server: what a multi-Region strong consistency (MRSC) global table is to
its readers and writers. Each region's request reaches the same tables, so a conditional write is decided against
the one item every region sees, as MRSC promises (`tickwork dev --regions ... --region-mode strong`; docs/local.md,
"Several regions"). The other services stay per region: each region's queues, event bus and metrics are its own.

What it does not play: MRSC's cross-region write latency, its witness, and `ReplicatedWriteConflictException` (a
write refused while another region writes the same item), which only an injected fault gives locally.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.responses import DynamoHandler

_REGIONAL_BACKEND = DynamoHandler.dynamodb_backend


def share_one_dynamodb(region: str) -> None:
    """Serve every region's DynamoDB requests from `region`'s tables. Idempotent for one region."""

    def shared(handler: Any) -> DynamoDBBackend:
        return dynamodb_backends[handler.current_account][region]

    DynamoHandler.dynamodb_backend = property(shared)  # type: ignore[method-assign,assignment]


@contextmanager
def one_dynamodb(region: str) -> Iterator[None]:
    """`share_one_dynamodb` for a block (the in-process tests), each region's own DynamoDB again after it."""
    share_one_dynamodb(region)
    try:
        yield
    finally:
        DynamoHandler.dynamodb_backend = _REGIONAL_BACKEND  # type: ignore[method-assign]
