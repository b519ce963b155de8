"""/v1/tenants: a tenant's settings (weight and quotas) and usage. An admin sets and reads any tenant's; any
caller reads its own (`/v1/tenants/me`). /v1/me: who the caller is, its tenant and whether it is an admin."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Admin, Tenant, Who, Wired
from tickwork.control.api_bodies import CallerView, TenantView
from tickwork.control.api_examples import TENANT_SETTINGS, openapi_examples
from tickwork.model.tenant_settings import TenantSettings

from routes.parameters import TenantName
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()
WholeSettings = Annotated[
    TenantSettings,
    Body(description="The tenant's settings, whole.", openapi_examples=openapi_examples(TENANT_SETTINGS)),
]


@router.get(
    "/v1/me",
    summary="Who you are: your tenant, and whether you are an admin",
    responses={200: ok(CallerView, "Your tenant and admin flag"), **problems()},
    tags=["tenants"],
)
def get_me(who: Who):
    return json_response(200, CallerView(tenant=who.tenant, admin=who.admin))


# Declared before /v1/tenants/<tenant>, which would otherwise take `me` for a tenant's name.
@router.get(
    "/v1/tenants/me",
    summary="Your tenant's settings and current usage",
    responses={200: ok(TenantView, "Your settings (the defaults where none are set) and usage"), **problems()},
    tags=["tenants"],
)
def get_my_tenant(built: Wired, tenant: Tenant):
    return json_response(200, built.tenants.view(tenant))


@router.get(
    "/v1/tenants/<tenant>",
    summary="A tenant's settings and current usage (admin only)",
    responses={200: ok(TenantView, "The settings (the defaults where none are set) and usage"), **problems()},
    tags=["tenants"],
)
def get_tenant(tenant: TenantName, built: Wired, _admin: Admin):
    return json_response(200, built.tenants.view(tenant))


@router.put(
    "/v1/tenants/<tenant>",
    summary="Set a tenant's weight and quotas, the whole document (admin only)",
    description="Replaces the tenant's settings: a quota left out is removed (no limit), an absent weight is 1. "
    "Functions see the change within 30 s. Setting `max_active_jobs` counts the tenant's active jobs.",
    responses={200: ok(TenantSettings, "The stored settings"), **problems(400, 415)},
    tags=["tenants"],
)
def put_tenant(tenant: TenantName, settings: WholeSettings, built: Wired, _admin: Admin, by: Acting):
    return json_response(200, built.tenants.put(tenant, settings, by=by))
