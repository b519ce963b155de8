"""The audit trail (docs/security.md "Audit trail"): the record of an API action, built for the write that makes
the change (which puts it in its own transaction), or, for an action that writes nothing to the table, written as
an intent before it (tickwork.model.redrive_intents); and the records a caller may read.

An action given no attribution (None: not an API request's, such as a test's direct call) writes no record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from tickwork.model.audit import Attribution, AuditRecord, AuditResource, Change, audit_record
from tickwork.model.clock import Clock, to_ms
from tickwork.model.errors import Forbidden
from tickwork.model.job import Job
from tickwork.model.workflow.definition import Workflow
from tickwork.store.audit import AuditIntents, AuditItems, PendingIntent
from tickwork.store.listings import Listings, Page

Scheduled = TypeVar("Scheduled", Job, Workflow)

# The window a listing reads when it names no `from`.
DEFAULT_AUDIT_WINDOW = timedelta(days=7)


def created_by(item: Scheduled, by: Attribution | None) -> Scheduled:
    """A new job or workflow, showing who created it (and so changed it last)."""
    if by is None:
        return item
    return item.model_copy(update={"created_by": by.actor.display, "updated_by": by.actor.display})


@dataclass(frozen=True)
class AuditTrail:
    items: AuditItems
    listings: Listings
    clock: Clock
    intents: AuditIntents  # the records of actions outside the table, written before them

    def item(
        self,
        by: Attribution | None,
        *,
        tenant: str,
        action: str,
        resource: AuditResource,
        before: BaseModel | None = None,
        after: BaseModel | None = None,
        changes: dict[str, Change] | None = None,
    ) -> dict[str, Any] | None:
        """The audit item of `action` by `by` (None: no record), to go in the change's own write: the change from
        `before` to `after`, or `changes` as given (tickwork.model.audit.audit_record)."""
        if by is None:
            return None
        record = audit_record(
            by,
            tenant=tenant,
            action=action,
            resource=resource,
            at=self.clock.now(),
            before=before,
            after=after,
            changes=changes,
        )
        return self.items.item(record)

    def created(
        self, by: Attribution | None, kind: Literal["job", "workflow"], item: Job | Workflow
    ) -> dict[str, Any] | None:
        """The audit item of a job's or a workflow's create."""
        resource = AuditResource(kind=kind, id=item.id)
        return self.item(by, tenant=item.tenant, action=f"{kind}.create", resource=resource, after=item)

    def intend(
        self,
        by: Attribution | None,
        *,
        tenant: str,
        action: str,
        resource: AuditResource,
        changes: dict[str, Change],
        settles_after: timedelta,
    ) -> PendingIntent | None:
        """The record of an action that writes nothing to the table, written as pending before the action (None:
        no record). The caller confirms it after, or marks it not happened; one its request left pending, the tick settles from
        `settles_after` on."""
        if by is None:
            return None
        at = self.clock.now()
        record = audit_record(by, tenant=tenant, action=action, resource=resource, at=at, changes=changes)
        return self.intents.write(record, settles_at=at + settles_after)

    def records(
        self,
        caller_tenant: str,
        *,
        admin: bool,
        tenant: str | None,
        since: datetime | None,
        until: datetime | None,
        **filters: Any,
    ) -> Page[AuditRecord]:
        """The records a caller may read, newest first: its own tenant's; an admin's, every tenant's (`tenant`
        None or `*`) or one's. Another tenant's, asked for by a tenant that is not an admin: Forbidden."""
        if tenant is not None and tenant != caller_tenant and not admin:
            raise Forbidden("only an admin may read another tenant's audit records")
        scope: str | None = caller_tenant if tenant is None and not admin else tenant
        if scope == "*":
            scope = None
        now = self.clock.now()
        upper = until or now
        lower = since or upper - DEFAULT_AUDIT_WINDOW
        return self.listings.list_audit(scope, from_ms=to_ms(lower), to_ms=to_ms(upper), **filters)
