"""Audit records (docs/security.md "Audit trail"): one item per change, written in the change's own transaction
(`Table`'s `audit=`), in the jobs table.

- pk=AUDIT#<tenant>, sk=<at, ms, 13 digits>#<record id>: a tenant's records in time order, read by one Query;
- tenant_key=AUDIT#*, tenant_sort=<at ms>#<record id> (tenant-index): every tenant's, for an admin;
- `record`: the record as JSON (its before/after values exactly as the API showed them); `action`, `actor_id`,
  `actor_display` and `resource_id` beside it for the Query's filters; `expires_at`: DynamoDB TTL, `at` plus
  the retention (AuditRetentionDays).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from tickwork.model.audit import AuditRecord
from tickwork.model.clock import to_ms
from tickwork.store.codec import expression_values, serialize
from tickwork.store.due_index import TENANT_INDEX

AUDIT_PARTITION = "AUDIT#"
ALL_TENANTS = "AUDIT#*"  # the tenant-index partition of every tenant's records


def audit_sort(at_ms: int, record_id: str = "") -> str:
    return f"{at_ms:013d}#{record_id}"


class AuditItems:
    """Builds a record's item; the write that it goes with puts it (the change's transaction)."""

    def __init__(self, retention: timedelta) -> None:
        self.retention = retention

    def item(self, record: AuditRecord) -> dict[str, Any]:
        at = to_ms(record.at)
        sort = audit_sort(at, record.id)
        return serialize(
            {
                "pk": AUDIT_PARTITION + record.tenant,
                "sk": sort,
                "kind": "AUDIT",
                "tenant": record.tenant,
                "tenant_key": ALL_TENANTS,
                "tenant_sort": sort,
                "action": record.action,
                "actor_id": record.actor.id,
                "actor_display": record.actor.display,
                "resource_id": record.resource.id,
                "record": record.model_dump_json(),
                "expires_at": (at + int(self.retention.total_seconds() * 1000)) // 1000,
            }
        )


def record_of(attrs: dict[str, Any]) -> AuditRecord:
    return AuditRecord.model_validate_json(attrs["record"])


class AuditQuery:
    """The Query of one page of audit records at [from_ms, to_ms] (older than `older_than`, a cursor's record),
    newest first: a tenant's partition, filtered by the Query (`conditions`); or, for tenant None, every tenant's
    through tenant-index, which carries none of the filters' attributes, so its records are filtered once read
    (`keep`). `actor` matches the actor's id or its display name."""

    def __init__(
        self,
        table_name: str,
        tenant: str | None,
        *,
        from_ms: int,
        to_ms: int,
        older_than: str | None = None,
        action: str | None = None,
        resource: str | None = None,
        actor: str | None = None,
    ) -> None:
        # Ids are of one length: just below the cursor's record's sort key is every older one.
        high = older_than[:-1] + chr(ord(older_than[-1]) - 1) + "~" if older_than else audit_sort(to_ms, "~")
        values = expression_values(low=audit_sort(from_ms), high=high)
        self.conditions: list[str] = []
        self.names: dict[str, str] = {}
        self.keep: Callable[[AuditRecord], bool] | None = None
        if tenant is None:
            self.params: dict[str, Any] = {"IndexName": TENANT_INDEX, "KeyConditionExpression": "tenant_key = :tk"}
            self.params["KeyConditionExpression"] += " AND tenant_sort BETWEEN :low AND :high"
            values |= expression_values(tk=ALL_TENANTS)
            if (action, resource, actor) != (None, None, None):
                self.keep = lambda record: (
                    action in (None, record.action)
                    and resource in (None, record.resource.id)
                    and (actor is None or actor in (record.actor.id, record.actor.display))
                )
        else:
            self.params = {"KeyConditionExpression": "pk = :tk AND sk BETWEEN :low AND :high"}
            values |= expression_values(tk=AUDIT_PARTITION + tenant)
            for attribute, value in (("action", action), ("resource_id", resource)):
                if value is not None:
                    self._condition(f"#{attribute} = :{attribute}", {f"#{attribute}": attribute})
                    values |= expression_values(**{attribute: value})
            if actor is not None:
                self._condition(
                    "(#actor_id = :actor OR #actor_display = :actor)",
                    {"#actor_id": "actor_id", "#actor_display": "actor_display"},
                )
                values |= expression_values(actor=actor)
        self.params |= {"TableName": table_name, "ExpressionAttributeValues": values, "ScanIndexForward": False}

    def _condition(self, condition: str, names: dict[str, str]) -> None:
        self.conditions.append(condition)
        self.names |= names
