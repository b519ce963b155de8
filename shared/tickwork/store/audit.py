"""Audit records (docs/security.md "Audit trail"): one item per change, written in the change's own transaction
(`Table`'s `audit=`), in the jobs table.

- pk=AUDIT#<tenant>, sk=<at, ms, 13 digits>#<record id>: a tenant's records in time order, read by one Query;
- tenant_key=AUDIT#*, tenant_sort=<at ms>#<record id> (tenant-index): every tenant's, for an admin;
- `record`: the record as JSON (its before/after values exactly as the API showed them); `action`, `actor_id`,
  `actor_display` and `resource_id` beside it for the Query's filters; `expires_at`: DynamoDB TTL, `at` plus
  the retention (AuditRetentionDays).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tickwork.model.audit import AuditRecord
from tickwork.model.clock import to_ms
from tickwork.store.codec import serialize

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
