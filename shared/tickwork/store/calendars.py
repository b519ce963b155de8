"""Calendar items, in their tenant's partition (pk=TENANT#<tenant>, sk=CALENDAR#<id>): read by key, listed by one
Query of the partition's CALENDAR# items (never a scan), replaced under optimistic locking."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tickwork.model.calendars import STORED, Calendar
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table
from tickwork.store.pending_audits import MARKER as AUDIT_MARKER
from tickwork.store.tenants import tenant_key

CALENDAR_PREFIX = "CALENDAR#"


def calendar_key(tenant: str, calendar_id: str) -> dict[str, Any]:
    return tenant_key(tenant, CALENDAR_PREFIX + calendar_id)


def _item(calendar: Calendar) -> dict[str, Any]:
    attrs = calendar.model_dump(mode="json", by_alias=True)
    return serialize({"pk": f"TENANT#{calendar.tenant}", "sk": CALENDAR_PREFIX + calendar.id, **attrs})


def _calendar(attrs: dict[str, Any]) -> Calendar:
    kept = {k: v for k, v in attrs.items() if k not in ("pk", "sk", AUDIT_MARKER)}
    return Calendar.model_validate(kept, context={STORED: True})


class CalendarRecords:
    """The calendar items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def put_new(self, calendar: Calendar, *, audit: dict[str, Any] | None = None) -> bool:
        """False if the id exists. `audit`: its audit record's item, in the same transaction (so for each below)."""
        won, _ = self._table.put_if_absent(_item(calendar), return_old=False, audit=audit)
        return won

    def replace(self, calendar: Calendar, *, expected_version: int, audit: dict[str, Any] | None = None) -> bool:
        """The whole calendar, only over the version read (False: it changed, or was deleted, since)."""
        won, _ = self._table.put_if(
            _item(calendar), "version = :v", None, expression_values(v=expected_version), return_old=False, audit=audit
        )
        return won

    def delete(self, tenant: str, calendar_id: str, *, audit: dict[str, Any] | None = None) -> bool:
        key = calendar_key(tenant, calendar_id)
        return self._table.delete_if(
            key, "sk = :sk", None, expression_values(sk=CALENDAR_PREFIX + calendar_id), audit=audit
        )

    def get(self, tenant: str, calendar_id: str) -> Calendar | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=calendar_key(tenant, calendar_id), ConsistentRead=True
        ).get("Item")
        return _calendar(deserialize(item)) if item else None

    def get_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Calendar]:
        """The calendars of these (tenant, id) pairs that exist: one BatchGetItem per 100."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        found = self._table.batch_get([calendar_key(t, c) for t, c in wanted])
        return {(c.tenant, c.id): c for c in map(_calendar, found)}

    def list(self, tenant: str) -> list[Calendar]:
        """The tenant's calendars, by id: one Query of its partition's CALENDAR# items per 1 MB."""
        values = {":pk": f"TENANT#{tenant}", ":prefix": CALENDAR_PREFIX}
        return [_calendar(a) for a in self._table.query_all("pk = :pk AND begins_with(sk, :prefix)", values)]
