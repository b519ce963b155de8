"""Tenant-scoped listings with opaque cursors, and idempotency records for creates. What the API reads.

Listings are paginated Queries, never a Scan:
- a tenant's jobs, newest first: `tenant-index`, partition `T#<tenant>#JOB`;
- a tenant's FAILED runs (the DLQ), newest first: `tenant-index`, partition `T#<tenant>#FAILED`;
- a job's runs, newest first: the base table, partition `JOB#<job id>`, sort keys `RUN#...`.

Cursors are opaque and bound to the tenant twice over:
1. A cursor carries only the position inside the partition (a sort-key value); the partition itself is always
   derived from the authenticated tenant (and a job the tenant owns), never from the cursor. A cursor can
   only ever position a query inside the caller's own data.
2. It is MACed (HMAC-SHA256) over the tenant, the listing and the position, so a cursor handed to another
   tenant, another listing, or edited by hand is rejected as a 400 naming `cursor`, instead of being
   silently reinterpreted.

Idempotency records live in the same table: pk `IDEM#<tenant>#<key>`, sk `IDEM`, with `expires_at` (TTL,
epoch seconds) 24 h after the first request. A record whose TTL has passed but which DynamoDB has not yet
deleted counts as absent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from botocore.exceptions import ClientError

from tickwork.clock import to_ms
from tickwork.errors import InvalidInput
from tickwork.models import Job, JobState, Run, RunStatus, parse_run_id
from tickwork.store import (
    TENANT_INDEX,
    UNREADABLE,
    deserialize,
    expression_values,
    job_from_attrs,
    note_unreadable,
    run_from_attrs,
    run_key,
)

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
IDEMPOTENCY_TTL = timedelta(hours=24)
# A filtered listing reads at most this many pages per request; past it, the page is returned short, with
# a cursor (so one request's cost stays bounded however selective the filter is).
MAX_QUERY_PAGES = 10
_FILTERED_PAGE = 200

IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9_.:=+/-]{1,128}$")
# Tenants are derived from identities (IAM role names and account ids, or the local keys file); '#' is
# the key separator and so never allowed.
TENANT = re.compile(r"^[A-Za-z0-9_.:=+,@/-]{1,128}$")
_SORT = re.compile(r"^[0-9A-Za-z.#]{1,96}$")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Cursors:
    """Opaque page cursors: `<base64url position>.<base64url MAC>`, bound to tenant and listing."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, tenant: str, scope: str, position: bytes) -> bytes:
        message = b"\x00".join((b"tickwork-cursor-v1", tenant.encode(), scope.encode(), position))
        return hmac.new(self._secret, message, hashlib.sha256).digest()[:16]

    def encode(self, tenant: str, scope: str, sort_value: str) -> str:
        position = json.dumps({"v": 1, "k": sort_value}, separators=(",", ":")).encode()
        return f"{_b64(position)}.{_b64(self._mac(tenant, scope, position))}"

    def decode(self, tenant: str, scope: str, cursor: str) -> str:
        """The position a cursor names, or InvalidInput('cursor') if it is not one this tenant was given here."""
        bad = InvalidInput.one("cursor", "not a cursor from this listing; start again without one")
        try:
            body, mac = cursor.split(".", 1)
            position = _unb64(body)
            given = _unb64(mac)
        except (ValueError, TypeError):
            raise bad from None
        if not hmac.compare_digest(given, self._mac(tenant, scope, position)):
            raise bad
        try:
            data = json.loads(position)
        except ValueError:  # pragma: no cover - the MAC matched, so we wrote it
            raise bad from None
        value = data.get("k") if isinstance(data, dict) else None
        if data.get("v") != 1 or not isinstance(value, str) or not _SORT.match(value):  # pragma: no cover
            raise bad
        return value


def cursor_secret(table_name: str) -> bytes:
    """The MAC key: CURSOR_SECRET when set, else one derived from the table name.

    Isolation never depends on this key staying secret (the partition comes from the tenant, see the module
    docstring); the MAC turns foreign or edited cursors into a clean 400.
    """
    configured = os.environ.get("CURSOR_SECRET")
    if configured:
        return configured.encode()
    return hashlib.sha256(f"tickwork-cursor:{table_name}".encode()).digest()


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class IdempotencyRecord:
    tenant: str
    key: str
    request_hash: str
    job_id: str
    created_at_ms: int
    response: dict[str, Any] | None  # the first response's body, once it was sent


class IdempotencyMismatch(Exception):
    """The key was used within 24 h with a different request body."""


class Catalog:
    """Reads a tenant's jobs, runs and DLQ page by page; keeps idempotency records. Takes its client."""

    def __init__(self, client: Any, table_name: str, *, cursor_key: bytes | None = None) -> None:
        self._db = client
        self.table = table_name
        self.cursors = Cursors(cursor_key or cursor_secret(table_name))

    # ------------------------------------------------------------ listings

    def list_jobs(
        self,
        tenant: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        state: JobState | None = None,
        job_type: str | None = None,
        name_prefix: str | None = None,
    ) -> Page[Job]:
        """The tenant's jobs, newest first (tenant-index, T#<tenant>#JOB)."""
        scope = "jobs"
        partition = f"T#{tenant}#JOB"
        start = None
        if cursor:
            sort = self.cursors.decode(tenant, scope, cursor)
            start = {
                "tenant_key": {"S": partition},
                "tenant_sort": {"S": sort},
                "pk": {"S": f"JOB#{sort.split('#', 1)[-1]}"},
                "sk": {"S": "JOB"},
            }
        filters, names, values = [], {}, {}
        if state is not None:
            filters.append("#state = :state")
            names["#state"] = "state"
            values["state"] = state.value
        if job_type is not None:
            filters.append("#type = :type")
            names["#type"] = "type"
            values["type"] = job_type
        if name_prefix:
            filters.append("begins_with(#name, :prefix)")
            names["#name"] = "name"
            values["prefix"] = name_prefix
        return self._page(
            tenant,
            scope,
            {
                "TableName": self.table,
                "IndexName": TENANT_INDEX,
                "KeyConditionExpression": "tenant_key = :tk",
                "ExpressionAttributeValues": expression_values(tk=partition, **values),
                "ScanIndexForward": False,
            },
            filters=filters,
            names=names,
            limit=limit,
            start=start,
            position=lambda attrs: str(attrs["tenant_sort"]),
            convert=job_from_attrs,
        )

    def list_failed_runs(self, tenant: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> Page[Run]:
        """The tenant's FAILED runs, newest failure first (tenant-index, T#<tenant>#FAILED)."""
        scope = "dlq"
        partition = f"T#{tenant}#FAILED"
        start = None
        if cursor:
            sort = self.cursors.decode(tenant, scope, cursor)
            run_id = sort.split("#", 1)[-1]
            if parse_run_id(run_id) is None:  # pragma: no cover - MACed, so we wrote it
                raise InvalidInput.one("cursor", "not a cursor from this listing")
            start = {"tenant_key": {"S": partition}, "tenant_sort": {"S": sort}, **run_key(run_id)}
        return self._page(
            tenant,
            scope,
            {
                "TableName": self.table,
                "IndexName": TENANT_INDEX,
                "KeyConditionExpression": "tenant_key = :tk",
                "ExpressionAttributeValues": expression_values(tk=partition),
                "ScanIndexForward": False,
            },
            filters=[],
            names={},
            limit=limit,
            start=start,
            position=lambda attrs: str(attrs["tenant_sort"]),
            convert=run_from_attrs,
        )

    def iter_failed_runs(self, tenant: str, *, max_items: int) -> Iterator[Run]:
        """Every FAILED run of the tenant, newest first, up to max_items (for redrive)."""
        cursor: str | None = None
        seen = 0
        while True:
            page = self.list_failed_runs(tenant, limit=MAX_LIMIT, cursor=cursor)
            for run in page.items:
                yield run
                seen += 1
                if seen >= max_items:
                    return
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def list_runs(
        self,
        tenant: str,
        job_id: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        status: RunStatus | None = None,
    ) -> Page[Run]:
        """Runs of one job (which the caller must already have checked is the tenant's), newest first."""
        scope = f"runs:{job_id}"
        pk = f"JOB#{job_id}"
        start = None
        if cursor:
            sort = self.cursors.decode(tenant, scope, cursor)
            start = {"pk": {"S": pk}, "sk": {"S": sort}}
        filters, names, values = [], {}, {}
        if status is not None:
            filters.append("#status = :status")
            names["#status"] = "status"
            values["status"] = status.value
        return self._page(
            tenant,
            scope,
            {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :run)",
                "ExpressionAttributeValues": expression_values(pk=pk, run="RUN#", **values),
                "ScanIndexForward": False,
            },
            filters=filters,
            names=names,
            limit=limit,
            start=start,
            position=lambda attrs: str(attrs["sk"]),
            convert=run_from_attrs,
        )

    def _page(
        self,
        tenant: str,
        scope: str,
        query: dict[str, Any],
        *,
        filters: list[str],
        names: dict[str, str],
        limit: int,
        start: dict[str, Any] | None,
        position: Callable[[dict[str, Any]], str],
        convert: Callable[[dict[str, Any]], T],
    ) -> Page[T]:
        """One page of `limit` items. Reads limit+1 to know whether there is more, so the last page says so.

        The cursor names the last item returned (not DynamoDB's LastEvaluatedKey, which may lie past it).
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput.one("limit", f"must be between 1 and {MAX_LIMIT}")
        kwargs = dict(query)
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        if names:
            kwargs["ExpressionAttributeNames"] = names
        if start:
            kwargs["ExclusiveStartKey"] = start
        found: list[dict[str, Any]] = []
        for _ in range(MAX_QUERY_PAGES):
            kwargs["Limit"] = max(_FILTERED_PAGE, limit + 1) if filters else limit + 1 - len(found)
            page = self._db.query(**kwargs)
            for raw in page.get("Items", []):
                found.append(deserialize(raw))
                if len(found) > limit:
                    return Page(
                        _readable(convert, found[:limit]),
                        self.cursors.encode(tenant, scope, position(found[limit - 1])),
                    )
            last = page.get("LastEvaluatedKey")
            if not last:
                return Page(_readable(convert, found), None)
            kwargs["ExclusiveStartKey"] = last
        # Budget spent on a selective filter: return what matched, and resume after what was read.
        resume = deserialize(kwargs["ExclusiveStartKey"])
        sort_attr = "sk" if "IndexName" not in kwargs else "tenant_sort"
        return Page(_readable(convert, found), self.cursors.encode(tenant, scope, str(resume[sort_attr])))

    # ------------------------------------------------------------ idempotency

    @staticmethod
    def _idem_key(tenant: str, key: str) -> dict[str, Any]:
        return {"pk": {"S": f"IDEM#{tenant}#{key}"}, "sk": {"S": "IDEM"}}

    def find_idempotency_record(self, tenant: str, key: str, *, now: datetime) -> IdempotencyRecord | None:
        """The live record of `key` (a read: checked before the request is, so a replay never re-validates)."""
        item = self._db.get_item(TableName=self.table, Key=self._idem_key(tenant, key), ConsistentRead=True).get("Item")
        if not item:
            return None
        attrs = deserialize(item)
        if int(attrs.get("expires_at", 0)) < int(now.timestamp()):
            return None  # past its TTL, not yet deleted by DynamoDB
        return self._record(tenant, key, attrs)

    @staticmethod
    def _record(tenant: str, key: str, attrs: dict[str, Any]) -> IdempotencyRecord:
        return IdempotencyRecord(
            tenant=tenant,
            key=key,
            request_hash=str(attrs.get("request_hash", "")),
            job_id=str(attrs.get("job_id", "")),
            created_at_ms=int(attrs.get("created_at_ms", 0)),
            response=json.loads(attrs["response"]) if attrs.get("response") else None,
        )

    def claim_idempotency_key(
        self, tenant: str, key: str, *, request_hash: str, job_id: str, now: datetime
    ) -> IdempotencyRecord | None:
        """Record the first use of `key`; None when this call is the first, else the earlier record.

        Raises IdempotencyMismatch when the earlier request had a different body.
        """
        now_s = int(now.timestamp())
        item = {
            **self._idem_key(tenant, key),
            "kind": {"S": "IDEM"},
            "tenant": {"S": tenant},
            "request_hash": {"S": request_hash},
            "job_id": {"S": job_id},
            "created_at_ms": {"N": str(to_ms(now))},
            "expires_at": {"N": str(now_s + int(IDEMPOTENCY_TTL.total_seconds()))},
        }
        try:
            self._db.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR expires_at < :now",
                ExpressionAttributeValues={":now": {"N": str(now_s)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old = deserialize(exc.response.get("Item") or {})  # type: ignore[arg-type]
            record = self._record(tenant, key, old)
            if record.request_hash != request_hash:
                raise IdempotencyMismatch(key) from None
            return record
        return None

    def release_idempotency_key(self, tenant: str, key: str, *, job_id: str) -> bool:
        """Free `key` after its request failed before creating anything, so the caller can retry it, corrected.

        Only our own record goes (it names our job id) and only while it holds no response; False otherwise.
        """
        try:
            self._db.delete_item(
                TableName=self.table,
                Key=self._idem_key(tenant, key),
                ConditionExpression="job_id = :job AND attribute_not_exists(#response)",
                ExpressionAttributeNames={"#response": "response"},
                ExpressionAttributeValues=expression_values(job=job_id),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def save_idempotent_response(self, tenant: str, key: str, *, job_id: str, response: dict[str, Any]) -> None:
        """Keep the first response, so a replay returns exactly it."""
        try:
            self._db.update_item(
                TableName=self.table,
                Key=self._idem_key(tenant, key),
                UpdateExpression="SET #response = :response",
                ConditionExpression="job_id = :job AND attribute_not_exists(#response)",
                ExpressionAttributeNames={"#response": "response"},
                ExpressionAttributeValues=expression_values(
                    response=json.dumps(response, separators=(",", ":"), sort_keys=True), job=job_id
                ),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise


def _readable(convert: Callable[[dict[str, Any]], T], items: list[dict[str, Any]]) -> list[T]:
    """The items converted; one the code cannot read is skipped (logged with its key, counted), so a single bad
    item never takes a whole listing down. The page may come out short; its cursor still moves past it."""
    converted: list[T] = []
    for attrs in items:
        try:
            converted.append(convert(attrs))
        except UNREADABLE as exc:
            note_unreadable(attrs, exc)
    return converted


def request_hash(body: Any) -> str:
    """A stable digest of a JSON request body (key order and whitespace do not matter)."""
    canonical = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
