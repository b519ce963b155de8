"""What must hold before routing and validation, answered straight from the raw event."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from problems import (
    IDENTITY_UNRESOLVED,
    INVALID_INPUT,
    MALFORMED,
    METHOD_NOT_ALLOWED,
    NOT_JSON,
    UNSUPPORTED_MEDIA_TYPE,
    UNSUPPORTED_MEDIA_TYPE_DETAIL,
    ProblemKind,
    kind_of,
    problem,
    problem_json,
)
from tickwork.control.api_bodies import PROBLEM_JSON
from tickwork.control.callers import RoleTags, caller_of
from tickwork.model.errors import AdminRequired, FieldError, Forbidden, IdentityUnresolved, Unauthenticated
from tickwork.settings import ApiSettings

PUBLIC_PATHS = {"/v1/health", "/v1/openapi.json"}
ADMIN_PREFIX = "/v1/tenants/"  # every tenants' route but the caller's own view is an admin's
OWN_TENANT_PATH = "/v1/tenants/me"
DEAD_LETTERS_PATHS = {"/v1/dead-letters": "GET", "/v1/dead-letters/redrive": "POST"}  # an admin's, every one
BODY_PATHS = {
    "/v1/jobs",
    "/v1/bulk/jobs",
    "/v1/dlq/redrive",
    "/v1/dead-letters/redrive",
}  # the POST routes that read a JSON body (and every PATCH and PUT)
# POST routes whose body is optional: JSON null there is no body (the document says `anyOf [object, null]`).
OPTIONAL_BODY_PATHS = re.compile(r"^/v1/workflow-runs/[^/]+/cancel$")


def precheck(event: dict[str, Any], settings: ApiSettings, role_tags: RoleTags) -> dict[str, Any] | None:
    """The caller is authenticated (401 before any 422), an admin where the route is an admin's (403 before
    any 422, which would tell a non-admin about the route), and a JSON body is an object (Powertools would
    otherwise take the first element of an array body). None when the request may go on to routing."""
    path = event.get("rawPath") or ""
    method = str(event.get("requestContext", {}).get("http", {}).get("method", "")).upper()

    def reply(
        kind: ProblemKind,
        detail: str,
        errors: list[FieldError] | None = None,
        allow: str | None = None,
        retry_after: int | None = None,
    ) -> dict[str, Any]:
        headers = {"Allow": allow} if allow else {}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return {
            "statusCode": kind.status,
            "headers": {"Content-Type": PROBLEM_JSON, **headers},
            "body": problem_json(problem(kind, detail, errors or [], path)),
            "isBase64Encoded": False,
        }

    if path not in PUBLIC_PATHS:
        try:
            caller = caller_of(APIGatewayProxyEventV2(event), settings, role_tags)
            # Only the methods the tenants' routes take: any other is a 405 from routing, admin or not.
            admins_route = (
                path.startswith(ADMIN_PREFIX) and method in ("GET", "PUT") and path != OWN_TENANT_PATH
            ) or DEAD_LETTERS_PATHS.get(path) == method
            if admins_route and not caller.admin:
                raise AdminRequired()
        except (Unauthenticated, Forbidden) as exc:
            return reply(kind_of(exc), str(exc))
        except IdentityUnresolved as exc:
            return reply(IDENTITY_UNRESOLVED, str(exc), retry_after=exc.retry_after)
    if path == OWN_TENANT_PATH and method != "GET":
        # /v1/tenants/me only reads the caller's own; PUT /v1/tenants/{tenant} would take `me` for a name.
        return reply(METHOD_NOT_ALLOWED, f"{path} takes GET, not {method}", allow="GET")
    content_type = str((event.get("headers") or {}).get("content-type", ""))
    body = event.get("body")
    takes_body = method in ("PATCH", "PUT") or (method == "POST" and path in BODY_PATHS)
    if (body or takes_body) and not _is_json(content_type):
        # Only JSON is spoken. Checked here because Powertools would parse forms itself (a multipart type
        # without a boundary raised, a 500) and read a form as if it were the JSON body. A bodiless POST
        # to an action (pause, trigger, ...) may carry any Content-Type.
        return reply(UNSUPPORTED_MEDIA_TYPE, UNSUPPORTED_MEDIA_TYPE_DETAIL, [NOT_JSON])
    if body:
        text = _body_text(body, bool(event.get("isBase64Encoded")))
        if text is None:
            message = "is not valid UTF-8 text"
            return reply(MALFORMED, f"the request body {message}", [FieldError("body", message)])
        try:
            parsed = json.loads(text)
        except ValueError:
            return None  # not JSON: validation answers 400 (or 415 for another content type)
        if not isinstance(parsed, dict) and not (parsed is None and OPTIONAL_BODY_PATHS.match(path)):
            message = f"must be a JSON object, not {type(parsed).__name__}"
            return reply(INVALID_INPUT, f"body: {message}", [FieldError("body", message)])
    return None


def _body_text(body: str, base64_encoded: bool) -> str | None:
    """The body as text, or None when it is not UTF-8 (or not the base64 it claims to be). Powertools would
    raise on it while decoding, a 500; checked here, it is a 400 naming `body`."""
    try:
        if base64_encoded:
            return base64.b64decode(body, validate=True).decode("utf-8")
        body.encode("utf-8")  # a str with unpaired surrogates (from a JSON \udcxx escape) is no UTF-8 text
    except (ValueError, UnicodeError):
        return None
    return body


def _is_json(content_type: str) -> bool:
    """No Content-Type (JSON is assumed, as Powertools does) or application/json, with any parameters."""
    return content_type.split(";", 1)[0].strip().lower() in ("", "application/json")
