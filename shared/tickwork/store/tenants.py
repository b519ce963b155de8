"""Tenant items (pk=TENANT#<tenant>): the settings an admin sets (sk=SETTINGS) and the tenant's usage (sk=USAGE);
and the tenants the stack knows (pk=TENANTS, sk=<tenant>: `KnownTenants`).

Other tenant items sit in the same partition (usage counters, limits); each has its own sort key.

The usage item's `active_jobs` counts the tenant's ACTIVE and PAUSED jobs and workflows, kept only while the
tenant has a `max_active_jobs` (tenants without one pay nothing). A job or workflow the counter includes carries
`COUNTED_FOR` = its tenant, so that leaving the active set decrements exactly the counted ones, once: the
transition that leaves (completion, cancel) removes the attribute in the same conditional write, and decrements
only when that write won (see tickwork.store.jobs).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from tickwork.model.clock import iso
from tickwork.model.errors import Conflict, InvalidInput
from tickwork.model.states import JobState
from tickwork.model.tenant_settings import TenantSettings
from tickwork.observability import logger
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table
from tickwork.store.due_index import TENANT_INDEX

SETTINGS_SK = "SETTINGS"
USAGE_SK = "USAGE"
ACTIVE_JOBS = "active_jobs"
SETTINGS_RETRIES = 5  # an audited PUT's reads and conditional puts while other PUTs win in between
# On a job or workflow item: the tenant whose `active_jobs` counts it (absent: not counted).
COUNTED_FOR = "counted_for"
# Beside it, in RegionMode strong (no transaction: counted, then marked): which count marked it (`count_in`).
COUNTED_BY = "counted_by"
# SUSPENDED (an open circuit breaker) is still active: it stays scheduled and comes back by itself.
ACTIVE_STATES = (JobState.ACTIVE.value, JobState.PAUSED.value, JobState.SUSPENDED.value)
_SETTINGS_FIELDS = set(TenantSettings.model_fields)


KNOWN_TENANTS = "TENANTS"  # the partition of the tenants the stack knows
# How many tenants an admin's `tenant=*` read reads at once (a Query of each one's partition a page, in parallel).
MAX_EVERY_TENANT = 50


def tenant_key(tenant: str, sort: str) -> dict[str, Any]:
    return {"pk": {"S": f"TENANT#{tenant}"}, "sk": {"S": sort}}


class KnownTenants:
    """The tenants the stack knows, one item each (pk=TENANTS, sk=<tenant>), for an admin's read of every tenant's
    (`tenant=*`: each known tenant's partition, read at once and merged; tickwork.store.merged_query). Every create
    of a job, workflow or calendar passes `know` before its item is written, so a tenant that owns one is known
    (a crash between the two leaves a known tenant with nothing, which a read shows as nothing). Cost: one PutItem
    (1 WRU) per tenant per execution environment, which remembers the tenants it has put; one Query a `*` read."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._put: set[str] = set()
        self._lock = threading.Lock()

    def know(self, tenant: str) -> None:
        """Make the tenant known (idempotent: the same item again)."""
        with self._lock:
            if tenant in self._put:
                return
        self._table.client.put_item(
            TableName=self._table.name, Item=serialize({"pk": KNOWN_TENANTS, "sk": tenant, "tenant": tenant})
        )
        with self._lock:
            self._put.add(tenant)

    def every(self) -> list[str]:
        """Every known tenant, by name; InvalidInput naming `tenant` when there are more than MAX_EVERY_TENANT (a
        read of every tenant's then names one)."""
        at_most = MAX_EVERY_TENANT
        answer = self._table.client.query(
            TableName=self._table.name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=expression_values(pk=KNOWN_TENANTS),
            ProjectionExpression="sk",
            Limit=at_most + 1,
        )
        tenants = [str(deserialize(item)["sk"]) for item in answer.get("Items", [])]
        if len(tenants) > at_most:
            raise InvalidInput.one(
                "tenant",
                f"`*` reads every tenant's at once, at most {at_most} tenants, and this stack knows more: name one",
            )
        return tenants


class TenantRecords:
    """The tenant items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def get_settings(self, tenant: str) -> TenantSettings | None:
        """The tenant's settings item, or None when no admin has set any (the defaults apply)."""
        item = self._table.client.get_item(
            TableName=self._table.name, Key=tenant_key(tenant, SETTINGS_SK), ConsistentRead=True
        ).get("Item")
        return _settings(deserialize(item)) if item else None

    def get_settings_many(self, tenants: Iterable[str]) -> dict[str, TenantSettings]:
        """The settings items of these tenants that exist (BatchGetItem, 100 keys a request)."""
        keys = [tenant_key(t, SETTINGS_SK) for t in sorted(set(tenants))]
        return {a["tenant"]: _settings(a) for a in self._table.batch_get(keys)}

    def get_settings_and_usage(self, tenant: str) -> tuple[TenantSettings | None, dict[str, Any]]:
        """The tenant's settings item (None: the defaults) and its usage item's attributes (empty if none), in
        one BatchGetItem."""
        found = {
            a["sk"]: a for a in self._table.batch_get([tenant_key(tenant, SETTINGS_SK), tenant_key(tenant, USAGE_SK)])
        }
        settings = _settings(found[SETTINGS_SK]) if SETTINGS_SK in found else None
        usage = {k: v for k, v in found.get(USAGE_SK, {}).items() if k not in ("pk", "sk")}
        return settings, usage

    def put_settings(
        self,
        tenant: str,
        settings: TenantSettings,
        now: datetime,
        *,
        audit_of: Callable[[TenantSettings | None], dict[str, Any] | None] | None = None,
    ) -> TenantSettings | None:
        """Replace the tenant's settings (an admin's PUT: the whole document, absent quotas removed); returns the
        settings it replaced (None: there were none). The put is conditional on the version read, and read and
        tried again while another PUT wins in between (Conflict after SETTINGS_RETRIES), so what it replaced is
        exact; with `audit_of` (the audit item of a change from the settings it is given), in one transaction with
        that item."""
        attrs = {
            "pk": f"TENANT#{tenant}",
            "sk": SETTINGS_SK,
            "tenant": tenant,
            "updated_at": iso(now),
            **settings.model_dump(exclude_none=True),
        }
        for _ in range(SETTINGS_RETRIES):
            item = self._table.client.get_item(
                TableName=self._table.name, Key=tenant_key(tenant, SETTINGS_SK), ConsistentRead=True
            ).get("Item")
            stored = deserialize(item) if item else {}
            previous = _settings(stored) if stored else None
            version = int(stored.get("version", 0))  # 0: none stored, or stored before settings had versions
            won, _ = self._table.put_if(
                serialize({**attrs, "version": version + 1}),
                "attribute_not_exists(version) OR version = :v",
                None,
                expression_values(v=version),
                audit=audit_of(previous) if audit_of is not None else None,
            )
            if won:
                return previous
        raise Conflict(f"tenant {tenant}'s settings are changing concurrently; try again")

    # ------------------------------------------------------------ the active jobs counter

    def reserve_active_job(self, tenant: str, limit: int) -> tuple[bool, int]:
        """Count one more active job, only while fewer than `limit` are. Returns (reserved, the count now, or
        as the refused condition saw it)."""
        won, attrs = self._table.update_if_returning_new(
            tenant_key(tenant, USAGE_SK),
            "ADD #active :one SET tenant = :tenant",
            "attribute_not_exists(#active) OR #active < :max",
            {"#active": ACTIVE_JOBS},
            expression_values(one=1, max=limit, tenant=tenant),
        )
        return won, int(attrs.get(ACTIVE_JOBS, 0))

    def release_active_job(self, tenant: str) -> None:
        """One counted job left the active set (or a reservation was not used)."""
        self._table.client.update_item(
            TableName=self._table.name,
            Key=tenant_key(tenant, USAGE_SK),
            UpdateExpression="ADD #active :minus",
            ExpressionAttributeNames={"#active": ACTIVE_JOBS},
            ExpressionAttributeValues=expression_values(minus=-1),
        )

    def release_after_transition(self, old: dict[str, Any]) -> None:
        """After a won transition out of the active set: decrement the counter that counted the item (`old`, the
        item before the write), if one did. The transition stands whatever happens here; a failure only leaves
        the counter one too high (logged), never too low."""
        tenant = old.get(COUNTED_FOR)
        if not tenant:
            return
        try:
            self.release_active_job(str(tenant))
        except Exception:
            logger.exception(
                "active jobs counter not decremented; it over-counts by one",
                extra={"tenant": tenant, "job_id": old.get("job_id")},
            )

    def uncounted_active(self, tenant: str) -> Iterator[str]:
        """Ids of the tenant's ACTIVE or PAUSED jobs and workflows not counted yet: a paged Query of its
        tenant-index partitions (never a Scan)."""
        for kind in ("JOB", "WORKFLOW"):
            params: dict[str, Any] = {
                "TableName": self._table.name,
                "IndexName": TENANT_INDEX,
                "KeyConditionExpression": "tenant_key = :key",
                "FilterExpression": "#state IN (:active, :paused, :suspended) AND attribute_not_exists(#counted)",
                "ProjectionExpression": "job_id",
                "ExpressionAttributeNames": {"#state": "state", "#counted": COUNTED_FOR},
                "ExpressionAttributeValues": expression_values(
                    key=f"T#{tenant}#{kind}",
                    active=ACTIVE_STATES[0],
                    paused=ACTIVE_STATES[1],
                    suspended=ACTIVE_STATES[2],
                ),
            }
            while True:
                page = self._table.client.query(**params)
                for item in page.get("Items", []):
                    yield str(deserialize(item)["job_id"])
                if "LastEvaluatedKey" not in page:
                    break
                params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def next_one_shot(self, tenant: str, *, newest: int = 100) -> str | None:
        """The earliest `next_run_at` (ISO) among the tenant's `newest` jobs and workflows that are ACTIVE
        one-shots (an `at` schedule): the soonest a job is likely to leave the active set. One Query page of
        each tenant-index partition, then one BatchGetItem of their `next_run_at` (not in the index's projection:
        every claim changes it), read only when a create was refused, so its cost is bounded."""
        keys: list[dict[str, Any]] = []
        for kind in ("JOB", "WORKFLOW"):
            page = self._table.client.query(
                TableName=self._table.name,
                IndexName=TENANT_INDEX,
                KeyConditionExpression="tenant_key = :key",
                FilterExpression="#state = :active AND attribute_exists(#schedule.#at)",
                ProjectionExpression="pk, sk",
                ExpressionAttributeNames={"#state": "state", "#schedule": "schedule", "#at": "at"},
                ExpressionAttributeValues=expression_values(key=f"T#{tenant}#{kind}", active=JobState.ACTIVE.value),
                ScanIndexForward=False,
                Limit=newest,
            )
            keys += page.get("Items", [])
        found = self._table.batch_get(keys, projection="next_run_at") if keys else []
        dues = [str(item["next_run_at"]) for item in found if "next_run_at" in item]
        return min(dues) if dues else None

    def count_in(self, tenant: str, job_id: str) -> bool:
        """Mark one job or workflow counted and count it, in one transaction (a crash never counts it twice, nor
        marks it uncounted); False if it was counted meanwhile, left the active set, or is gone. Without
        transactions (RegionMode strong): counted first, then marked, the count released if the mark lost; a crash
        between the two leaves the counter one too high, never too low (as `release_after_transition`)."""
        mark: dict[str, Any] = {
            "Key": {"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}},
            "UpdateExpression": "SET #counted = :tenant",
            "ConditionExpression": "attribute_not_exists(#counted) AND tenant = :tenant "
            "AND #state IN (:active, :paused, :suspended)",
            "ExpressionAttributeNames": {"#counted": COUNTED_FOR, "#state": "state"},
            "ExpressionAttributeValues": expression_values(
                tenant=tenant, active=ACTIVE_STATES[0], paused=ACTIVE_STATES[1], suspended=ACTIVE_STATES[2]
            ),
        }
        count = {
            "Key": tenant_key(tenant, USAGE_SK),
            "UpdateExpression": "ADD #active :one SET tenant = :tenant",
            "ExpressionAttributeNames": {"#active": ACTIVE_JOBS},
            "ExpressionAttributeValues": expression_values(one=1, tenant=tenant),
        }
        if self._table.audited_writes is not None:
            self._table.client.update_item(TableName=self._table.name, **count)
            # The mark names this count, so that the mark sent again after its answer was lost (its condition then
            # failing on it) is told from another count's: that one's count is released, never this one's.
            token = secrets.token_hex(8)
            mark["UpdateExpression"] += ", #counted_by = :count_token"
            mark["ExpressionAttributeNames"] = {**mark["ExpressionAttributeNames"], "#counted_by": COUNTED_BY}
            mark["ExpressionAttributeValues"] = {
                **mark["ExpressionAttributeValues"],
                **expression_values(count_token=token),
            }
            won, seen = self._table.write_if("Update", **mark, ReturnValuesOnConditionCheckFailure="ALL_OLD")
            won = won or seen.get(COUNTED_BY) == token
            if not won:
                self.release_active_job(tenant)
            return won
        try:
            self._table.client.transact_write_items(
                TransactItems=[
                    {"Update": {"TableName": self._table.name, **mark}},
                    {"Update": {"TableName": self._table.name, **count}},
                ]
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            return False
        return True


def _settings(attrs: dict[str, Any]) -> TenantSettings:
    return TenantSettings.model_validate({k: v for k, v in attrs.items() if k in _SETTINGS_FIELDS})
