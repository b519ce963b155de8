"""About the API itself: liveness, with the regions' roles as this region sees them and the replication lag
(docs/regions.md); the OpenAPI document is served by app.py, which generates it."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Wired
from tickwork import __version__ as VERSION
from tickwork.control.api_bodies import Health, RegionHealth

from routes.responses import json_response, ok

router = APIGatewayHttpRouter()


@router.get(
    "/v1/health",
    summary="Liveness, the regions' roles and the replication lag",
    responses={200: ok(Health, "Alive")},
    tags=["meta"],
)
def health(built: Wired):
    roles, lag = built.region_failovers.status(), built.replication_lag.read()
    return json_response(200, Health(version=VERSION, region=RegionHealth(**roles.model_dump(), **lag.model_dump())))
