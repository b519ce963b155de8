"""The Tickwork HTTP API (v1): Powertools' event handler with request validation and a generated OpenAPI.

Routes live in routes/ (one Router per resource) and are given the caller's tenant and the domain objects by
dependency injection (dependencies.py). Errors are RFC 9457 problem details naming each bad field
(problems.py). Tenants come from the verified caller identity, or locally from the configuration (see
tickwork.control.callers and docs/api.md).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.depends import DependencyResolutionError
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from dependencies import WIRING, WiringSlot
from precheck import precheck
from problems import (
    METHODS,
    domain_problem,
    no_route_problem,
    unexpected_problem,
    unsupported_media_type_problem,
    validation_problem,
)
from routes import (
    audit,
    backfill,
    calendars,
    dead_letters,
    dlq,
    freezes,
    jobs,
    meta,
    preview,
    regions,
    runs,
    tenants,
    variants,
    workflows,
)
from routes import metrics as metrics_routes
from routes.meta import VERSION
from tickwork import VERSION_HEADER
from tickwork.jobtypes import registry
from tickwork.model.errors import TickworkError
from tickwork.observability import observed
from tickwork_console.hosting import hosted_console_response

app = APIGatewayHttpResolver(enable_validation=True)

# ---------------------------------------------------------------- wiring

_wiring = WiringSlot()
services = _wiring.services  # the wiring, built on first use
use_services = _wiring.set  # tests and the local runtime inject theirs

# ---------------------------------------------------------------- routes, in the OpenAPI document's order

app.include_router(meta.router)


@app.get("/v1/openapi.json", summary="This OpenAPI document", tags=["meta"])
def openapi():
    return Response(status_code=200, content_type="application/json", body=openapi_document())


# The document as committed beside this module: building it takes about a second of CPU, which an execution
# environment's first request for it (or for a method a path does not take) would otherwise wait for. A test fails
# when it differs from what the routes build (python -m tickwork_local.generate.openapi_file rewrites it).
OPENAPI_FILE = Path(__file__).with_name("openapi.json")


def openapi_document() -> str:
    """The document for the job types registered now: as committed where they are the ones it was built with (the
    built-in ones), else (JobTypeModules add types, whose payloads the document describes) built once for them."""
    return _openapi_document_for(tuple(registry.names()))


@cache
def _openapi_document_for(job_types: tuple[str, ...]) -> str:
    committed = OPENAPI_FILE.read_text(encoding="utf-8")
    if tuple(json.loads(committed)["components"]["schemas"]["JobSpec"]["properties"]["type"]["enum"]) == job_types:
        return committed
    return build_openapi_document()


def build_openapi_document() -> str:
    """The document the routes build (tickwork_local.generate.openapi_file writes it to OPENAPI_FILE)."""
    return app.get_openapi_json_schema(
        title="Tickwork API",
        version=VERSION,
        summary="Jobs, runs, the dead-letter queue and workflows of a Tickwork scheduler.",
        description="Errors are RFC 9457 problem details. Deployed, requests are signed with SigV4 (IAM auth).",
    )


_ROUTERS = (
    jobs,
    variants,
    preview,
    backfill,
    runs,
    dlq,
    dead_letters,
    workflows,
    tenants,
    metrics_routes,
    calendars,
    freezes,
    audit,
    regions,
)
for _resource in _ROUTERS:
    app.include_router(_resource.router)


@cache
def methods_by_path() -> dict[str, frozenset[str]]:
    """The methods each documented path takes, read from the document (built once, on the first request no route
    matched or the first for the document)."""
    paths: dict[str, dict[str, Any]] = json.loads(openapi_document()).get("paths", {})
    return {path: frozenset(m for m in METHODS if m.lower() in item) for path, item in paths.items()}


def allowed_methods(path: str) -> set[str]:
    """The methods the documented paths matching `path` take; a {parameter} matches one path segment."""
    parts = path.split("/")
    allowed: set[str] = set()
    for template, methods in methods_by_path().items():
        pattern = template.split("/")
        if len(pattern) == len(parts) and all(
            p == s or (p.startswith("{") and p.endswith("}") and s) for p, s in zip(pattern, parts, strict=True)
        ):
            allowed |= methods
    return allowed


# ---------------------------------------------------------------- errors (see problems.py)


def _instance() -> str | None:
    return app.current_event.path if app.current_event else None


@app.exception_handler(TickworkError)
def _domain_error(exc: TickworkError) -> Response:
    return domain_problem(exc, _instance())


@app.exception_handler(DependencyResolutionError)
def _dependency_failed(exc: DependencyResolutionError) -> Response:
    # Powertools wraps what a dependency raised (the tenant's refusal, say): answer for the error itself.
    if isinstance(exc.__cause__, TickworkError):
        return domain_problem(exc.__cause__, _instance())
    return unexpected_problem(_instance())


@app.exception_handler(RequestValidationError)
def _request_invalid(exc: RequestValidationError) -> Response:
    return validation_problem(exc, _instance())


@app.exception_handler(RequestUnsupportedContentType)
def _unsupported(exc: RequestUnsupportedContentType) -> Response:
    return unsupported_media_type_problem(_instance())


@app.not_found
def _no_route(exc: NotFoundError) -> Response:
    event = app.current_event
    return no_route_problem(event.http_method.upper(), event.path, sorted(allowed_methods(event.path)))


@app.exception_handler(Exception)
def _unexpected(exc: Exception) -> Response:
    return unexpected_problem(_instance())


# ---------------------------------------------------------------- entry point


@observed(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The hosted console's files, on TokenApi's open routes: before the caller is looked for (there is none yet).
    console = hosted_console_response(event, _wiring.settings())
    if console is not None:
        return console
    refused = precheck(event, _wiring.settings(), _wiring.role_tags())
    if refused is not None:
        return refused
    _wiring.services()  # built before any route: the job types it imports are in the OpenAPI document too
    app.append_context(**{WIRING: _wiring})
    answer = app.resolve(event, context)
    answer.setdefault("headers", {})[VERSION_HEADER] = VERSION  # the CLI warns when it is older (tickwork_cli.versions)
    return answer


__all__ = ["app", "handler", "openapi_document", "services", "use_services"]
