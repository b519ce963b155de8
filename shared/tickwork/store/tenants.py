"""Tenant items (pk=TENANT#<tenant>): the settings an admin sets (sk=SETTINGS).

Other tenant items sit in the same partition (usage counters, limits); each has its own sort key.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from tickwork.clock import iso
from tickwork.store.codec import deserialize, serialize
from tickwork.store.conditional import Table
from tickwork.tenant_settings import TenantSettings

SETTINGS_SK = "SETTINGS"
_SETTINGS_FIELDS = set(TenantSettings.model_fields)


def tenant_key(tenant: str, sort: str) -> dict[str, Any]:
    return {"pk": {"S": f"TENANT#{tenant}"}, "sk": {"S": sort}}


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

    def put_settings(self, tenant: str, settings: TenantSettings, now: datetime) -> None:
        """Replace the tenant's settings (an admin's PUT: the whole document, absent quotas removed)."""
        attrs = {
            "pk": f"TENANT#{tenant}",
            "sk": SETTINGS_SK,
            "tenant": tenant,
            "updated_at": iso(now),
            **settings.model_dump(exclude_none=True),
        }
        self._table.client.put_item(TableName=self._table.name, Item=serialize(attrs))


def _settings(attrs: dict[str, Any]) -> TenantSettings:
    return TenantSettings.model_validate({k: v for k, v in attrs.items() if k in _SETTINGS_FIELDS})
