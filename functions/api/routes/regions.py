"""/v1/regions: the regions' roles in RegionMode eventual (docs/regions.md), read and failed over by an admin."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Admin, Tenant, Wired
from tickwork.control.api_examples import REGION_FAILOVER, openapi_examples
from tickwork.control.region_failover import FailoverRequest, FailoverResult, RegionStatus

from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()


@router.get(
    "/v1/regions",
    summary="This region, the mode, and the active region and epoch its replica holds (admin only)",
    responses={200: ok(RegionStatus, "The roles as this region sees them"), **problems()},
    tags=["regions"],
)
def region_status(built: Wired, _admin: Admin):
    return json_response(200, built.region_failovers.status())


@router.post(
    "/v1/regions/failover",
    summary="Make another region active under the next epoch (admin only; RegionMode eventual)",
    description="Refused (409) while replication has not caught up with the active region, unless `force`; forced, "
    "the answer names the runs that may run twice. Publishes `Region Failover` on the bus.",
    responses={200: ok(FailoverResult, "The new roles"), **problems(400, 409, 415)},
    tags=["regions"],
)
def fail_over(
    built: Wired,
    _admin: Admin,
    by: Acting,
    tenant: Tenant,
    request: Annotated[
        FailoverRequest,
        Body(
            description="The region to make active, and whether to force.",
            openapi_examples=openapi_examples(REGION_FAILOVER),
        ),
    ],
):
    return json_response(200, built.region_failovers.fail_over(request, by=by, tenant=tenant))
