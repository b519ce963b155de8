"""/v1/audit: who changed what (docs/security.md "Audit trail"). A caller reads its own tenant's records; an admin
every tenant's, or one's."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Depends
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Wired, caller
from tickwork.control.api_bodies import AuditList
from tickwork.control.callers import Caller
from tickwork.model.schedule import CallerInstant

from routes.parameters import Cursor, Limit, ReadTenant
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()

Who = Annotated[Caller, Depends(caller)]


@router.get(
    "/v1/audit",
    summary="Audit records: each change made through the API, who made it and from where, newest first",
    description="Your tenant's records; an admin's, every tenant's (no `tenant`, or `*`) or one tenant's. A tenant "
    "that names another is refused (403). A page of every tenant's filtered records may come out short, with a "
    "cursor.",
    responses={200: ok(AuditList, "One page"), **problems(403, 422)},
    tags=["audit"],
)
def list_audit(
    built: Wired,
    who: Who,
    limit: Limit = 50,
    cursor: Cursor = None,
    resource: Annotated[str | None, Query(max_length=128, description="Only records of this resource id.")] = None,
    actor: Annotated[
        str | None, Query(max_length=2048, description="Only records of this actor (its id, or its display name).")
    ] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="Only records of this action, such as `job.pause`.")
    ] = None,
    since: Annotated[
        CallerInstant | None, Query(alias="from", description="An instant with its offset; default `to` - 7 days.")
    ] = None,
    until: Annotated[
        CallerInstant | None, Query(alias="to", description="An instant with its offset; default now.")
    ] = None,
    tenant: ReadTenant = None,
):
    page = built.audit.records(
        who.tenant,
        admin=who.admin,
        tenant=tenant,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
        resource=resource,
        actor=actor,
        action=action,
    )
    return json_response(200, AuditList(items=page.items, next_cursor=page.next_cursor))
