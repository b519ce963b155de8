"""Idempotency records for creates: pk `IDEM#<tenant>#<key>`, sk `IDEM`, in the jobs table.

A record names the request's digest and the job id it creates, and later the first response's body. It has
`expires_at` (TTL, epoch seconds) 24 h after the first request; a record whose TTL has passed but which
DynamoDB has not yet deleted counts as absent. Its writes are conditional writes through `Table`, so a lost
race comes back as a value, never as a botocore error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table

IDEMPOTENCY_TTL = timedelta(hours=24)
# What an Idempotency-Key may be: it becomes part of the record's key, where '#' is the separator.
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9_.:=+/-]{1,128}$")
# The record holds the first response until it is sent; until then a replay finishes the first request.
_UNANSWERED = "job_id = :job AND attribute_not_exists(#response)"


@dataclass(frozen=True)
class IdempotencyRecord:
    tenant: str
    key: str
    request_hash: str
    job_id: str
    created_at_ms: int
    response: dict[str, Any] | None  # the first response's body, once it was sent


def _record_key(tenant: str, key: str) -> dict[str, Any]:
    return {"pk": {"S": f"IDEM#{tenant}#{key}"}, "sk": {"S": "IDEM"}}


def _record(tenant: str, key: str, attrs: dict[str, Any]) -> IdempotencyRecord:
    return IdempotencyRecord(
        tenant=tenant,
        key=key,
        request_hash=str(attrs.get("request_hash", "")),
        job_id=str(attrs.get("job_id", "")),
        created_at_ms=int(attrs.get("created_at_ms", 0)),
        response=json.loads(attrs["response"]) if attrs.get("response") else None,
    )


class IdempotencyRecords:
    """The idempotency records of the table. Shares the store's `Table`."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, tenant: str, key: str, *, now: datetime) -> IdempotencyRecord | None:
        """The live record of `key` (a read: checked before the request is, so a replay never re-validates)."""
        item = self._table.client.get_item(
            TableName=self._table.name, Key=_record_key(tenant, key), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        attrs = deserialize(item)
        if int(attrs.get("expires_at", 0)) < int(now.timestamp()):
            return None  # past its TTL, not yet deleted by DynamoDB
        return _record(tenant, key, attrs)

    def claim(
        self, tenant: str, key: str, *, request_hash: str, job_id: str, now: datetime
    ) -> IdempotencyRecord | None:
        """Record the first use of `key`; None when this call is the first, else the earlier record (whose
        request_hash the caller compares: the same key with another body is the caller's conflict)."""
        now_s = int(now.timestamp())
        item = {
            **_record_key(tenant, key),
            **serialize(
                {
                    "kind": "IDEM",
                    "tenant": tenant,
                    "request_hash": request_hash,
                    "job_id": job_id,
                    "created_at_ms": to_ms(now),
                    "expires_at": now_s + int(IDEMPOTENCY_TTL.total_seconds()),
                }
            ),
        }
        won, old = self._table.put_if(
            item, "attribute_not_exists(pk) OR expires_at < :now", None, expression_values(now=now_s), return_old=True
        )
        return None if won else _record(tenant, key, old)

    def release(self, tenant: str, key: str, *, job_id: str) -> bool:
        """Free `key` after its request failed before creating anything, so the caller can retry it, corrected.

        Only our own record goes (it names our job id) and only while it holds no response; False otherwise.
        """
        return self._table.delete_if(
            _record_key(tenant, key), _UNANSWERED, {"#response": "response"}, expression_values(job=job_id)
        )

    def save_response(self, tenant: str, key: str, *, job_id: str, response: dict[str, Any]) -> None:
        """Keep the first response, so a replay returns exactly it (a record that has one already keeps it)."""
        self._table.update_if(
            _record_key(tenant, key),
            "SET #response = :response",
            _UNANSWERED,
            {"#response": "response"},
            expression_values(response=json.dumps(response, separators=(",", ":"), sort_keys=True), job=job_id),
        )
