"""Calendars as the API sees them: a tenant's create, read, list, replace and delete, and the check that a job or
workflow names only calendars its tenant can see.

A change applies to the occurrences not yet claimed (the tick claims up to its horizon, 2 minutes, ahead); a
run already claimed keeps what was decided at its claim (docs/operations.md, "Calendars").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.control.audit import AuditTrail
from tickwork.model.audit import Attribution, AuditResource
from tickwork.model.blocking import check_crossable
from tickwork.model.calendars import (
    BLOCKED_PREVIEW_MAX_DAYS,
    BlockedSpans,
    Calendar,
    CalendarDefinition,
    blocked_spans,
)
from tickwork.model.clock import Clock, to_ms
from tickwork.model.errors import Conflict, InvalidInput, NotFound
from tickwork.model.freezes import EVERY_TENANT
from tickwork.model.ids import new_job_id
from tickwork.observability import logger
from tickwork.store import KnownTenants
from tickwork.store.calendars import CalendarRecords


def check_calendars_visible(
    records: CalendarRecords | None, tenant: str, calendar_ids: Sequence[str], *, now: datetime
) -> None:
    """InvalidInput naming `calendars` when one of the ids is not a calendar of `tenant` (missing, or another
    tenant's: the same answer, so no tenant learns of another's), or when together they make a blackout with no
    end found within the budget (each alone was checked at its create). One BatchGetItem; none without ids."""
    if not calendar_ids or records is None:
        return
    found = records.get_many((tenant, c) for c in calendar_ids)
    missing = [c for c in calendar_ids if (tenant, c) not in found]
    if missing:
        raise InvalidInput.one("calendars", f"no such calendar: {', '.join(missing)} (see GET /v1/calendars)")
    if len(calendar_ids) > 1:
        check_crossable([found[(tenant, c)] for c in calendar_ids], now, field="calendars")


@dataclass(frozen=True)
class CalendarService:
    records: CalendarRecords
    clock: Clock
    audit: AuditTrail  # each change's record, in the change's own write
    known: KnownTenants  # a tenant is known before its first calendar is written (an admin's `tenant=*` reads it)

    def blocked(self, tenant: str, calendar_id: str, start: datetime | None, days: int) -> BlockedSpans:
        """What the tenant's calendar blocks from `start` (None: now) for `days` (at most
        BLOCKED_PREVIEW_MAX_DAYS): one read, one bounded evaluation."""
        if not 1 <= days <= BLOCKED_PREVIEW_MAX_DAYS:
            raise InvalidInput.one("days", f"must be between 1 and {BLOCKED_PREVIEW_MAX_DAYS}")
        calendar = self.get(tenant, calendar_id)
        start = start or self.clock.now()
        return blocked_spans(calendar, start, start + timedelta(days=days))

    def create(
        self, tenant: str, spec: CalendarDefinition, *, by: Attribution | None = None, calendar_id: str | None = None
    ) -> Calendar:
        """Under `calendar_id`, else a new id (Conflict, nothing written, when a calendar of the tenant has it)."""
        now = self.clock.now()
        check_crossable((spec,), now, field="windows")
        calendar = Calendar(
            id=calendar_id or new_job_id(to_ms(now), prefix="c"),
            tenant=tenant,
            created_at=now,
            updated_at=now,
            **_fields(spec),
        )
        self.known.know(tenant)
        if not self.records.put_new(calendar, audit=self._audit(by, "create", after=calendar)):
            raise Conflict(f"calendar {calendar.id} exists already")  # a given id; a new one has 75 random bits
        logger.info("calendar created", extra={"calendar_id": calendar.id, "tenant": tenant})
        return calendar

    def get(self, tenant: str, calendar_id: str) -> Calendar:
        """The tenant's calendar; EVERY_TENANT: whichever known tenant's it is (one BatchGetItem)."""
        if tenant == EVERY_TENANT:
            found = self.records.get_many((known, calendar_id) for known in self.known.every())
            calendar = next(iter(found.values()), None)
        else:
            calendar = self.records.get(tenant, calendar_id)
        if calendar is None:
            raise NotFound(f"calendar {calendar_id} not found")
        return calendar

    def of_job(self, tenant: str, calendar_ids: Sequence[str]) -> tuple[Calendar, ...]:
        """A job's calendars that exist, in its order (one BatchGetItem; none without any)."""
        found = self.records.get_many((tenant, c) for c in calendar_ids)
        return tuple(found[(tenant, c)] for c in calendar_ids if (tenant, c) in found)

    def list(self, tenant: str) -> list[Calendar]:
        """The tenant's calendars; EVERY_TENANT: every known tenant's, tenant by tenant (a Query each)."""
        if tenant == EVERY_TENANT:
            return [calendar for known in self.known.every() for calendar in self.records.list(known)]
        return self.records.list(tenant)

    def replace(
        self, tenant: str, calendar_id: str, spec: CalendarDefinition, *, by: Attribution | None = None
    ) -> Calendar:
        """The whole calendar, over the version read (Conflict if it changed meanwhile)."""
        current = self.get(tenant, calendar_id)
        check_crossable((spec,), self.clock.now(), field="windows")
        changed = current.model_copy(
            update={**_fields(spec), "version": current.version + 1, "updated_at": self.clock.now()}
        )
        audit = self._audit(by, "replace", before=current, after=changed)
        if not self.records.replace(changed, expected_version=current.version, audit=audit):
            raise Conflict(f"calendar {calendar_id} changed concurrently; read it and try again")
        return changed

    def delete(self, tenant: str, calendar_id: str, *, by: Attribution | None = None) -> Calendar:
        """The calendar as it was. A job still naming it then runs as if it did not (the tick finds no such
        calendar, and logs it)."""
        current = self.get(tenant, calendar_id)
        if not self.records.delete(tenant, calendar_id, audit=self._audit(by, "delete", before=current)):
            raise NotFound(f"calendar {calendar_id} not found")
        logger.info("calendar deleted", extra={"calendar_id": calendar_id, "tenant": tenant})
        return current

    def _audit(
        self, by: Attribution | None, verb: str, *, before: Calendar | None = None, after: Calendar | None = None
    ) -> dict[str, Any] | None:
        """The audit item of a change from `before` to `after` (None: created, deleted)."""
        calendar = after or before
        assert calendar is not None
        return self.audit.item(
            by,
            tenant=calendar.tenant,
            action=f"calendar.{verb}",
            resource=AuditResource(kind="calendar", id=calendar.id),
            before=before,
            after=after,
        )


def _fields(spec: CalendarDefinition) -> dict[str, object]:
    return {name: getattr(spec, name) for name in CalendarDefinition.model_fields}
