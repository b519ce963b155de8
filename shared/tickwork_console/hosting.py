"""The hosted console (docs/security.md, "The hosted console"): with the stack's token API, the API function serves
the console's files itself, on the routes TokenApi leaves open (`GET /console`, `GET /console/{proxy+}`: no token,
as a page must load before its user signs in), beside `/console/config.json`, the settings the page signs in with
(the issuer, the public client id, the scopes; nothing secret). Every answer carries the page's security headers:
a Content-Security-Policy that runs only the console's own scripts and lets it reach only its own origin and the
issuer's (discovery, token endpoint), no framing, no referrer (a sign-in's code is in the URL a moment).
"""

from __future__ import annotations

import base64
import json
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from tickwork.settings import ApiSettings

import tickwork_console

CONFIG_PATH = f"{tickwork_console.PREFIX}/config.json"


def config_of(settings: ApiSettings) -> dict[str, Any]:
    """What config.json says: how the page signs in (the API is the page's own origin), and where it signs out when
    the issuer's discovery names no end_session_endpoint (Cognito's)."""
    signin = {"issuer": settings.jwt_issuer, "client_id": settings.console_client_id, "scopes": settings.console_scopes}
    if settings.console_logout_url:
        signin["logout_endpoint"] = settings.console_logout_url
    return {"signin": signin}


def security_headers(issuer: str) -> dict[str, str]:
    """The headers of every hosted console answer. connect-src names the issuer's origin and, for an issuer whose
    token endpoint is on another HTTPS host (Cognito's domain, Google's), any HTTPS origin: the scripts that may run
    are the console's own (script-src 'self'), so no other script can use that."""
    parts = urlsplit(issuer)
    issuer_origin = f"{parts.scheme}://{parts.netloc}"
    policy = "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            f"connect-src 'self' {issuer_origin} https:",
            "form-action 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "object-src 'none'",
        ]
    )
    headers = {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
    }
    if parts.scheme == "https":
        headers["Strict-Transport-Security"] = "max-age=31536000"
    return headers


def hosted_console_response(event: dict[str, Any], settings: ApiSettings) -> dict[str, Any] | None:
    """The payload 2.0 response of a GET of the hosted console's, or None: not a console path, not a GET, or the
    stack hosts no console (no CONSOLE_CLIENT_ID or JWT_ISSUER), when the request goes on to the API as any other."""
    path = event.get("rawPath") or ""
    method = str((event.get("requestContext") or {}).get("http", {}).get("method", "")).upper()
    if not (settings.console_client_id and settings.jwt_issuer) or method != "GET":
        return None
    if not tickwork_console.is_console_path(path):
        return None
    headers = security_headers(settings.jwt_issuer)

    def answer(status: int, content_type: str, body: str, **more: str) -> dict[str, Any]:
        return {
            "statusCode": status,
            "headers": {**headers, "Content-Type": content_type, **more},
            "body": body,
            "isBase64Encoded": False,
        }

    if path == tickwork_console.PREFIX:
        # Relative URLs in the page (app.js, styles.css) resolve against /console/, not /.
        return answer(HTTPStatus.MOVED_PERMANENTLY.value, "text/plain", "", Location=tickwork_console.PREFIX + "/")
    if path == CONFIG_PATH:
        return answer(200, "application/json", json.dumps(config_of(settings)), **{"Cache-Control": "no-store"})
    found = tickwork_console.asset(path)
    if found is None:
        problem = {"type": "about:blank", "status": 404, "title": "Not Found", "detail": f"No file at {path}."}
        return answer(404, "application/problem+json", json.dumps(problem))
    try:
        return answer(200, found.content_type, found.body.decode("utf-8"), **{"Cache-Control": "no-cache"})
    except UnicodeDecodeError:  # an image
        binary = answer(200, found.content_type, base64.b64encode(found.body).decode(), **{"Cache-Control": "no-cache"})
        return {**binary, "isBase64Encoded": True}
