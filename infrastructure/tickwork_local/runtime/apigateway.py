"""Serve a function over HTTP as an API Gateway HTTP API with a `$default` route and a Lambda proxy
integration (payload format 2.0) does: each request becomes the event API Gateway would send, and the
function's response becomes the HTTP response, with API Gateway's rules for both.

Besides the API, the local server answers `/docs` with Swagger UI for the API's OpenAPI document. Swagger
UI's script and stylesheet come from the aws-lambda-powertools package (it ships them for its own
`enable_swagger`), so the page works offline. It also answers `/console` with the web console's static files
(tickwork_console), which call the API on this same origin, and the local runtime's own lists
(`GET /_tickwork/events`: tickwork_local.runtime.event_log), and Lambda's Invoke of the node's own functions
(`POST /2015-03-31/functions/<name>/invocations`: `aws lambda invoke --endpoint-url` this server, to try the custom
resource provider with a CloudFormation event).

In open mode every caller is the admin, so the server acts for any web page the user opens: it answers only
for the hosts it listens on, and refuses a cross-site change (tickwork_console.request_guard), before any of it.

With a JWT authorizer (`tickwork dev --idp`: tickwork_local.identity.jwt_authorizer) the server is the stack's TokenApi
instead: every request needs a bearer token of the issuer, but those of the routes the template leaves open
(`GET /console`, `GET /console/{proxy+}`, the hosted console, which the function then serves as deployed).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import tickwork_console
from aws_lambda_powertools.event_handler.openapi import swagger_ui
from tickwork_console.request_guard import accepted_hosts, refusal_of

from tickwork_local.identity.jwt_authorizer import JwtAuthorizer, TokenRefused
from tickwork_local.runtime.function_invokes import INVOKE_PATH, LocalInvokes
from tickwork_local.runtime.lambda_runtime import LOCAL_ACCOUNT_ID

log = logging.getLogger("tickwork_local.runtime.apigateway")

API_ID = "local"
STAGE = "$default"
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit

# Bodies API Gateway passes as text; anything else (or anything not UTF-8) is base64-encoded.
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-www-form")


def _is_text(content_type: str) -> bool:
    ct = content_type.split(";", 1)[0].strip().lower()
    return not ct or ct.startswith(_TEXT_TYPES) or ct.endswith(("+json", "+xml"))


def http_api_event(
    *,
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str = "127.0.0.1",
    protocol: str = "HTTP/1.1",
    now: datetime | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The payload format 2.0 event of an HTTP API `$default` route for one HTTP request."""
    now = now or datetime.now(UTC)
    url = urlsplit(target)
    path = url.path or "/"
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies += [c.strip() for c in value.split(";") if c.strip()]
            continue
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    query: dict[str, str] = {}
    for name, value in parse_qsl(url.query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    host = merged.get("host", "localhost")
    domain = host.split(":", 1)[0]
    request_id = request_id or base64.b32encode(uuid.uuid4().bytes[:10]).decode().rstrip("=")
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": url.query,
        "headers": merged,
        "requestContext": {
            "accountId": LOCAL_ACCOUNT_ID,
            "apiId": API_ID,
            "domainName": domain,
            "domainPrefix": domain.split(".", 1)[0],
            "http": {
                "method": method.upper(),
                "path": path,
                "protocol": protocol,
                "sourceIp": source_ip,
                "userAgent": merged.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": "$default",
            "stage": STAGE,
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if body:
        text: str | None = None
        if _is_text(merged.get("content-type", "")):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is None:
            event["body"] = base64.b64encode(body).decode()
            event["isBase64Encoded"] = True
        else:
            event["body"] = text
    return event


def http_api_response(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """API Gateway's reading of a payload 2.0 response: a dict with statusCode is taken as the response;
    anything else is JSON, status 200 (a string is sent as it is)."""
    if isinstance(result, dict) and "statusCode" in result:
        status = int(result["statusCode"])
        headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers += [(str(name), str(v)) for v in values]
        headers += [("Set-Cookie", str(c)) for c in result.get("cookies") or []]
        raw = result.get("body")
        if raw is None:
            body = b""
        elif result.get("isBase64Encoded"):
            body = base64.b64decode(raw)
        else:
            body = str(raw).encode()
        return status, headers, body
    if isinstance(result, str):
        return 200, [("Content-Type", "application/json")], result.encode()
    return 200, [("Content-Type", "application/json")], json.dumps(result).encode()


# ---------------------------------------------------------------------------- Swagger UI at /docs


def _swagger_assets() -> Path | None:
    folder = Path(swagger_ui.__file__).parent
    return folder if (folder / "swagger-ui-bundle.min.js").is_file() else None


DOCS_ASSETS = {
    "/docs/swagger-ui-bundle.min.js": ("swagger-ui-bundle.min.js", "application/javascript"),
    "/docs/swagger-ui.min.css": ("swagger-ui.min.css", "text/css"),
}


def docs_page(spec_url: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Tickwork API (local)</title>
  <link rel="stylesheet" href="/docs/swagger-ui.min.css">
</head>
<body>
  <div id="swagger-ui">Loading the API description from <a href="{spec_url}">{spec_url}</a>...</div>
  <script src="/docs/swagger-ui-bundle.min.js"></script>
  <script>
    window.ui = SwaggerUIBundle({{
      url: "{spec_url}",
      dom_id: "#swagger-ui",
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis],
      layout: "BaseLayout"
    }});
  </script>
</body>
</html>
"""


# ---------------------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    server: ApiGatewayServer
    protocol_version = "HTTP/1.1"
    server_version = "tickwork-local"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        names = set()
        for name, value in headers:
            if name.lower() in ("content-length", "connection", "transfer-encoding"):
                continue
            names.add(name.lower())
            self.send_header(name, value)
        if "content-type" not in names and body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _invoke(self, path: str) -> None:
        """Lambda's Invoke of a function this node plays (`aws lambda invoke --endpoint-url <this URL>`): its answer
        as Lambda's, or Lambda's 404 for any other function."""
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        assert self.server.invokes is not None  # _handle came here only with them
        answered = self.server.invokes.answer(path, body)
        if answered is None:
            missing = {"Type": "User", "message": "Function not found: this node plays only its own functions"}
            self._send(404, [("X-Amzn-ErrorType", "ResourceNotFoundException")], json.dumps(missing).encode())
            return
        payload, error = answered
        headers = [("X-Amz-Executed-Version", "$LATEST")] + ([("X-Amz-Function-Error", error)] if error else [])
        self._send(200, headers, payload)

    def _problem(self, status: HTTPStatus, message: str) -> None:
        # API Gateway's own errors are {"message": ...}.
        self._send(status.value, [("Content-Type", "application/json")], json.dumps({"message": message}).encode())

    def _handle(self) -> None:
        refused = refusal_of(self.command, self.headers, self.server.accepted_hosts)
        if refused is not None:
            self._send(*refused.response())
            return
        path = urlsplit(self.path).path
        if (
            self.server.docs
            and self.command in ("GET", "HEAD")
            and (path in ("/docs", "/docs/") or path in DOCS_ASSETS)
        ):
            self._docs(path)
            return
        if self.command == "POST" and self.server.invokes is not None and INVOKE_PATH.match(path):
            self._invoke(path)
            return
        if self.command in ("GET", "HEAD") and path in self.server.local_routes:
            body = json.dumps({"items": self.server.local_routes[path]()}).encode()
            self._send(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body)
            return
        if self.server.console and self.command in ("GET", "HEAD") and tickwork_console.is_console_path(path):
            self._console(path)
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._problem(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "Request Entity Too Large")
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        event = http_api_event(
            method=self.command,
            target=self.path,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            protocol=self.request_version,
        )
        if self.server.authorizer is not None and not (
            self.command == "GET" and tickwork_console.is_console_path(path)
        ):
            try:
                event["requestContext"]["authorizer"] = self.server.authorizer.authorize(
                    self.headers.get("Authorization")
                )
            except TokenRefused as exc:
                self._send(*JwtAuthorizer.refusal(exc))
                return
        request_id = event["requestContext"]["requestId"]
        try:
            result = self.server.invoke(event)
        except Exception as exc:
            # A function error: API Gateway answers 500 with its own body.
            log.error("API function error on %s %s: %s: %s", self.command, path, type(exc).__name__, exc, exc_info=exc)
            self._problem(HTTPStatus.INTERNAL_SERVER_ERROR, "Internal Server Error")
            return
        try:
            status, headers, payload = http_api_response(result)
        except Exception as exc:
            log.error("malformed API function response: %s", exc)
            self._problem(HTTPStatus.INTERNAL_SERVER_ERROR, "Internal Server Error")
            return
        self._send(status, [*headers, ("Apigw-Requestid", request_id)], payload)

    def _docs(self, path: str) -> None:
        if path in DOCS_ASSETS:
            name, content_type = DOCS_ASSETS[path]
            folder = _swagger_assets()
            if folder is None:
                self._problem(HTTPStatus.NOT_FOUND, "Not Found")
                return
            headers = [("Content-Type", content_type), ("Cache-Control", "max-age=86400")]
            self._send(200, headers, (folder / name).read_bytes())
            return
        self._send(200, [("Content-Type", "text/html; charset=utf-8")], docs_page(self.server.spec_url).encode())

    def _console(self, path: str) -> None:
        if path == tickwork_console.PREFIX:
            # Relative URLs in the page (app.js, styles.css) resolve against /console/, not /.
            self._send(HTTPStatus.MOVED_PERMANENTLY.value, [("Location", tickwork_console.PREFIX + "/")], b"")
            return
        found = tickwork_console.asset(path)
        if found is None:
            self._problem(HTTPStatus.NOT_FOUND, "Not Found")
            return
        self._send(200, [("Content-Type", found.content_type), ("Cache-Control", "no-cache")], found.body)

    def __getattr__(self, name: str) -> Any:
        # Every method (QUERY, PROPFIND, ...) goes to the function, as API Gateway passes it, and the function
        # answers 405 (with Allow) for one a path does not take; http.server looks up do_<METHOD> and, finding
        # none, would answer a 501 HTML page itself.
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)


class ApiGatewayServer(ThreadingHTTPServer):
    """A threaded HTTP server that hands every request to `invoke` as an HTTP API (payload 2.0) event."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        invoke: Callable[[dict[str, Any]], Any],
        *,
        docs: bool = True,
        spec_url: str = "/v1/openapi.json",
        console: bool = True,
        accept_hosts: tuple[str, ...] = (),
        local_routes: dict[str, Callable[[], list[Any]]] | None = None,
        authorizer: JwtAuthorizer | None = None,
        invokes: LocalInvokes | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        # TokenApi's JWT authorizer, when set: the function serves the console, on the routes it leaves open.
        self.authorizer = authorizer
        # The local runtime's own lists (`/_tickwork/...`), not the API's: answered here, never by the function.
        self.local_routes = local_routes or {}
        # Lambda's Invoke of the node's functions (the custom resource provider's, to try a CloudFormation event).
        self.invokes = invokes
        self.accepted_hosts = accepted_hosts(address[0], accept_hosts)
        self.invoke = invoke
        self.docs = docs
        self.console = console and authorizer is None
        self.spec_url = spec_url
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.2}, name="api", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
