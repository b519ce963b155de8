"""/v1/freezes: stop the selected jobs for a while (a deploy, a platform upgrade), and lift it early."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.openapi.params import Path as PathParam
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Who, Wired
from pydantic import StringConstraints
from tickwork.control.api_bodies import FreezeList
from tickwork.control.api_examples import FREEZE, openapi_examples
from tickwork.model.freezes import Freeze, FreezeSpec

from routes.parameters import ReadTenant
from routes.responses import json_response, linked, ok, problems

router = APIGatewayHttpRouter()

FreezeId = Annotated[
    str, StringConstraints(pattern=r"^f[0-9a-z]{25}$"), PathParam(description="A freeze id: f and 25 characters.")
]
FREEZE_OPERATIONS = {
    "GetFreeze": ("GET", "/v1/freezes/{freeze_id}"),
    "LiftFreeze": ("DELETE", "/v1/freezes/{freeze_id}"),
}


@router.post(
    "/v1/freezes",
    summary="Freeze jobs: by tags, by id, or all of yours (an admin: every tenant's)",
    description="From `from` (default now) until `until` (or for `for_seconds`): their occurrences are recorded "
    "SKIPPED `freeze`, or with `on_blocked: DEFER` run at its end, collapsed by each job's catch-up policy. Runs "
    "already claimed inside it are held back too.",
    responses={201: linked(ok(Freeze, "Created"), "freeze_id", FREEZE_OPERATIONS), **problems(400, 415)},
    tags=["freezes"],
)
def create_freeze(
    spec: Annotated[FreezeSpec, Body(description="The freeze.", openapi_examples=openapi_examples(FREEZE))],
    built: Wired,
    who: Who,
    by: Acting,
):
    return json_response(201, built.freezes.create(who, spec, by=by))


@router.get(
    "/v1/freezes",
    summary="Your freezes and those over every tenant, newest first (ended ones for a day)",
    description="An admin's: every tenant's; with `tenant`, the ones that tenant sees (its own and those over every "
    "tenant).",
    responses={200: ok(FreezeList, "The freezes"), **problems(403)},
    tags=["freezes"],
)
def list_freezes(built: Wired, who: Who, tenant: ReadTenant = None):
    return json_response(200, FreezeList(items=built.freezes.visible_to(who.reader_for(tenant))))


@router.get(
    "/v1/freezes/<freeze_id>",
    summary="Read a freeze",
    responses={200: ok(Freeze, "The freeze"), **problems(404)},
    tags=["freezes"],
)
def get_freeze(freeze_id: FreezeId, built: Wired, who: Who, tenant: ReadTenant = None):
    return json_response(200, built.freezes.get(who.reader_for(tenant), freeze_id))


@router.delete(
    "/v1/freezes/<freeze_id>",
    summary="Lift a freeze now",
    responses={200: ok(Freeze, "The freeze, lifted"), **problems(404, 409)},
    tags=["freezes"],
)
def lift_freeze(freeze_id: FreezeId, built: Wired, who: Who, by: Acting):
    return json_response(200, built.freezes.lift(who, freeze_id, by=by))
