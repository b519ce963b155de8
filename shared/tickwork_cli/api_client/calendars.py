"""The typed client's calendars and freezes: create, list, read, replace and delete a calendar, and what it blocks;
create, list, read and lift a freeze."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tickwork.control.api_bodies import CalendarBlocked, CalendarList, FreezeList
from tickwork.model.calendars import Calendar, CalendarDefinition
from tickwork.model.freezes import Freeze, FreezeSpec

from tickwork_cli.api_client.exchange import Part, segment

OPERATIONS = {
    ("GET", "/v1/calendars"): "list_calendars",
    ("POST", "/v1/calendars"): "create_calendar",
    ("GET", "/v1/calendars/{calendar_id}"): "get_calendar",
    ("PUT", "/v1/calendars/{calendar_id}"): "replace_calendar",
    ("DELETE", "/v1/calendars/{calendar_id}"): "delete_calendar",
    ("GET", "/v1/calendars/{calendar_id}/blocked"): "calendar_blocked",
    ("GET", "/v1/freezes"): "list_freezes",
    ("POST", "/v1/freezes"): "create_freeze",
    ("GET", "/v1/freezes/{freeze_id}"): "get_freeze",
    ("DELETE", "/v1/freezes/{freeze_id}"): "lift_freeze",
}


class Calendars(Part):
    def list_calendars(self, *, tenant: str | None = None) -> list[Calendar]:
        return self._exchange.one(CalendarList, "GET", "/v1/calendars", query={"tenant": tenant}).items

    def create_calendar(self, definition: CalendarDefinition | Mapping[str, Any]) -> Calendar:
        return self._exchange.one(Calendar, "POST", "/v1/calendars", body=definition)

    def get_calendar(self, calendar_id: str, *, tenant: str | None = None) -> Calendar:
        path = f"/v1/calendars/{segment(calendar_id)}"
        return self._exchange.one(Calendar, "GET", path, query={"tenant": tenant})

    def replace_calendar(self, calendar_id: str, definition: CalendarDefinition | Mapping[str, Any]) -> Calendar:
        """The calendar, whole: a field left out takes its default."""
        return self._exchange.one(Calendar, "PUT", f"/v1/calendars/{segment(calendar_id)}", body=definition)

    def delete_calendar(self, calendar_id: str) -> Calendar:
        return self._exchange.one(Calendar, "DELETE", f"/v1/calendars/{segment(calendar_id)}")

    def calendar_blocked(
        self,
        calendar_id: str,
        *,
        from_: datetime | str | None = None,
        days: int | None = None,
        tenant: str | None = None,
    ) -> CalendarBlocked:
        """What the calendar blocks over `days` days from `from_` (default now)."""
        query = {"tenant": tenant, "days": days, "from": from_}
        return self._exchange.one(CalendarBlocked, "GET", f"/v1/calendars/{segment(calendar_id)}/blocked", query=query)

    def list_freezes(self, *, tenant: str | None = None) -> list[Freeze]:
        return self._exchange.one(FreezeList, "GET", "/v1/freezes", query={"tenant": tenant}).items

    def create_freeze(self, spec: FreezeSpec | Mapping[str, Any]) -> Freeze:
        return self._exchange.one(Freeze, "POST", "/v1/freezes", body=spec)

    def get_freeze(self, freeze_id: str, *, tenant: str | None = None) -> Freeze:
        return self._exchange.one(Freeze, "GET", f"/v1/freezes/{segment(freeze_id)}", query={"tenant": tenant})

    def lift_freeze(self, freeze_id: str) -> Freeze:
        return self._exchange.one(Freeze, "DELETE", f"/v1/freezes/{segment(freeze_id)}")
