"""Building answers, and documenting them in the OpenAPI document: JSON bodies and the problems a route may
answer with (problem+json, see problems.py)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from pydantic import BaseModel
from tickwork.api_models import PROBLEM_JSON, Problem


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    text = body.model_dump_json() if isinstance(body, BaseModel) else json.dumps(body, separators=(",", ":"))
    return Response(status_code=status, content_type="application/json", body=text, headers=headers)


def ok(model: Any, description: str) -> Any:
    return {"description": description, "content": {"application/json": {"model": model}}}


_PROBLEM_DESCRIPTIONS = {
    400: "Malformed request",
    401: "No caller identity (or no valid API key, locally)",
    403: "The caller's identity maps to no tenant (or the route is an admin's)",
    404: "Unknown id (or another tenant's)",
    409: "Conflicting state",
    413: "Payload too large",
    415: "The body is not JSON",
    422: "Invalid input, naming each field",
    429: "Over the tenant's quota (`quota`, `limit`, `current`); `Retry-After` when waiting helps",
}


def problems(*statuses: int) -> dict[int, Any]:
    """The route's problem answers, with those every route may give (401, 403, 422)."""
    every = sorted({401, 403, 422, *statuses})
    return {s: {"description": _PROBLEM_DESCRIPTIONS[s], "content": {PROBLEM_JSON: {"model": Problem}}} for s in every}
