"""About the API itself: liveness (the OpenAPI document is served by app.py, which generates it)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from tickwork import __version__ as VERSION
from tickwork.control.api_bodies import Health

from routes.responses import json_response, ok

router = APIGatewayHttpRouter()


@router.get("/v1/health", summary="Liveness", responses={200: ok(Health, "Alive")}, tags=["meta"])
def health():
    return json_response(200, Health(version=VERSION))
