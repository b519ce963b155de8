"""About the API itself: liveness, with the regions' roles as this region sees them (docs/regions.md); the OpenAPI
document is served by app.py, which generates it."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Wired
from tickwork import __version__ as VERSION
from tickwork.control.api_bodies import Health

from routes.responses import json_response, ok

router = APIGatewayHttpRouter()


@router.get(
    "/v1/health", summary="Liveness, and the regions' roles", responses={200: ok(Health, "Alive")}, tags=["meta"]
)
def health(built: Wired):
    return json_response(200, Health(version=VERSION, region=built.region_failovers.status()))
