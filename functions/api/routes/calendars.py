"""/v1/calendars: a tenant's calendars (blackouts and maintenance windows its jobs and workflows name)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.openapi.params import Path as PathParam
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Tenant, Who, Wired
from pydantic import StringConstraints
from tickwork.control.api_bodies import BlockedSpan, CalendarBlocked, CalendarList
from tickwork.control.api_examples import CALENDAR, openapi_examples
from tickwork.model.blocking import CALENDAR_ID_PATTERN
from tickwork.model.calendars import BLOCKED_PREVIEW_MAX_DAYS, MAX_BLOCKED_SPANS, Calendar, CalendarDefinition
from tickwork.model.schedule import CallerInstant

from routes.parameters import ReadTenant
from routes.responses import json_response, linked, ok, problems

router = APIGatewayHttpRouter()

CalendarId = Annotated[
    str, StringConstraints(pattern=CALENDAR_ID_PATTERN), PathParam(description="A calendar id: c and 25 characters.")
]
CalendarBody = Annotated[
    CalendarDefinition, Body(description="The calendar, whole.", openapi_examples=openapi_examples(CALENDAR))
]
CALENDAR_OPERATIONS = {
    "GetCalendar": ("GET", "/v1/calendars/{calendar_id}"),
    "ReplaceCalendar": ("PUT", "/v1/calendars/{calendar_id}"),
    "DeleteCalendar": ("DELETE", "/v1/calendars/{calendar_id}"),
}


@router.post(
    "/v1/calendars",
    summary="Create a calendar",
    description="Windows of whole dates, a cron and a duration, or a range; `exclude` keeps runs out of them, "
    "`include` keeps runs in them. Jobs and workflows name calendars in `calendars`.",
    responses={
        201: linked(ok(Calendar, "Created"), "calendar_id", CALENDAR_OPERATIONS),
        **problems(400, 415),
    },
    tags=["calendars"],
)
def create_calendar(spec: CalendarBody, built: Wired, tenant: Tenant, by: Acting):
    return json_response(201, built.calendars.create(tenant, spec, by=by))


@router.get(
    "/v1/calendars",
    summary="List your calendars (an admin: a tenant's, or every tenant's)",
    responses={200: ok(CalendarList, "Every calendar of yours"), **problems(403)},
    tags=["calendars"],
)
def list_calendars(built: Wired, who: Who, tenant: ReadTenant = None):
    return json_response(200, CalendarList(items=built.calendars.list(who.tenant_to_read(tenant))))


@router.get(
    "/v1/calendars/<calendar_id>",
    summary="Read a calendar (an admin: a tenant's, named by `tenant`, or any tenant's with `*`)",
    responses={200: ok(Calendar, "The calendar"), **problems(403, 404)},
    tags=["calendars"],
)
def get_calendar(calendar_id: CalendarId, built: Wired, who: Who, tenant: ReadTenant = None):
    return json_response(200, built.calendars.get(who.tenant_to_read(tenant), calendar_id))


@router.get(
    "/v1/calendars/<calendar_id>/blocked",
    summary="What a calendar blocks over the next days (a preview: nothing is written)",
    description=f"The spans it blocks from `from` (default now) for `days`, in order, each clipped to the range: "
    f"at most {MAX_BLOCKED_SPANS} spans, within a bounded evaluation (`complete` false past either).",
    responses={200: ok(CalendarBlocked, "The spans"), **problems(403, 404, 422)},
    tags=["calendars"],
)
def calendar_blocked(
    calendar_id: CalendarId,
    built: Wired,
    who: Who,
    tenant: ReadTenant = None,
    since: Annotated[CallerInstant | None, Query(alias="from", description="An instant with its offset.")] = None,
    days: Annotated[int, Query(ge=1, le=BLOCKED_PREVIEW_MAX_DAYS, description="How many days ahead.")] = 7,
):
    start = since or built.clock.now()
    found = built.calendars.blocked(who.tenant_to_read(tenant), calendar_id, start, days)
    spans = [BlockedSpan(from_=a, until=b) for a, b in found.spans]
    answer = CalendarBlocked(
        calendar_id=calendar_id, from_=start, until=start + timedelta(days=days), spans=spans, complete=found.complete
    )
    return json_response(200, answer)


@router.put(
    "/v1/calendars/<calendar_id>",
    summary="Replace a calendar, the whole document",
    description="Applies to the occurrences not yet claimed; a run already claimed (up to the tick's horizon, "
    "2 minutes ahead) keeps what its claim decided.",
    responses={200: ok(Calendar, "The calendar as stored"), **problems(400, 404, 409, 415)},
    tags=["calendars"],
)
def replace_calendar(calendar_id: CalendarId, spec: CalendarBody, built: Wired, tenant: Tenant, by: Acting):
    return json_response(200, built.calendars.replace(tenant, calendar_id, spec, by=by))


@router.delete(
    "/v1/calendars/<calendar_id>",
    summary="Delete a calendar",
    description="A job still naming it runs as if it did not.",
    responses={200: ok(Calendar, "The calendar as it was"), **problems(404)},
    tags=["calendars"],
)
def delete_calendar(calendar_id: CalendarId, built: Wired, tenant: Tenant, by: Acting):
    return json_response(200, built.calendars.delete(tenant, calendar_id, by=by))
