"""`tickwork console`: the console on 127.0.0.1, its /v1 calls forwarded to a deployed API and signed there.

Like `kubectl proxy`: the browser talks only to this loopback server; the server signs each forwarded call with
SigV4 (service execute-api) from the user's AWS credentials, through the CLI's own client (tickwork_cli.client),
so the credentials never reach the browser. What the browser sends is forwarded from an allow-list of headers
(an Authorization or cookie of its own is dropped), and what comes back is filtered by another (no Set-Cookie,
no x-amz-* headers), so nothing credential-like crosses in either direction. Only the browser's own pages
may use it: a foreign `Host` (DNS rebinding) and a cross-site change are refused (tickwork_console.request_guard).
"""

from __future__ import annotations

import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tickwork_cli.client import Client, ConfigError

import tickwork_console
from tickwork_console.request_guard import accepted_hosts, refusal_of

log = logging.getLogger("tickwork_console.proxy")

API_PREFIX = "/v1/"
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit
# Request headers the API reads; anything else the browser sends (Authorization, Cookie, ...) stays here.
FORWARDED_REQUEST_HEADERS = ("accept", "content-type", "idempotency-key")
# Response headers the console needs; anything else the API answers stays here.
FORWARDED_RESPONSE_HEADERS = ("content-type", "allow", "retry-after", "idempotent-replayed", "apigw-requestid")


class _Handler(BaseHTTPRequestHandler):
    server: ConsoleServer
    protocol_version = "HTTP/1.1"
    server_version = "tickwork-console"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: HTTPStatus, title: str, detail: str) -> None:
        # An RFC 9457 problem, so the console shows it as it shows the API's own.
        body = json.dumps({"type": "about:blank", "status": status.value, "title": title, "detail": detail})
        self._send(status.value, [("Content-Type", "application/problem+json")], body.encode())

    def _handle(self) -> None:
        refused = refusal_of(self.command, self.headers, self.server.accepted_hosts)
        if refused is not None:
            self._send(*refused.response())
            return
        path = urlsplit(self.path).path
        if path.startswith(API_PREFIX):
            self._forward()
            return
        if self.command not in ("GET", "HEAD"):
            self._json(HTTPStatus.METHOD_NOT_ALLOWED, "Method Not Allowed", "Only the console's files and /v1.")
            return
        if path in ("/", tickwork_console.PREFIX):
            self._send(HTTPStatus.FOUND.value, [("Location", tickwork_console.PREFIX + "/")], b"")
            return
        found = tickwork_console.asset(path)
        if found is None:
            self._json(HTTPStatus.NOT_FOUND, "Not Found", f"No file at {path}.")
            return
        self._send(200, [("Content-Type", found.content_type), ("Cache-Control", "no-cache")], found.body)

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "Request Entity Too Large", "The body is over 10 MB.")
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() in FORWARDED_REQUEST_HEADERS}
        try:
            answer = self.server.client.send(self.command, self.path, headers, body)
        except ConfigError as exc:
            self._json(HTTPStatus.BAD_GATEWAY, "The API cannot be called", str(exc))
            return
        except Exception as exc:  # a failure to sign or to reach the API: the console shows it, not a blank page
            log.warning("forwarding %s %s failed: %s", self.command, self.path, exc)
            self._json(HTTPStatus.BAD_GATEWAY, "The API cannot be called", f"{type(exc).__name__}: {exc}")
            return
        kept = [(k, v) for k, v in answer.headers.items() if k.lower() in FORWARDED_RESPONSE_HEADERS]
        self._send(answer.status, kept, answer.body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class ConsoleServer(ThreadingHTTPServer):
    """Serves the console's files and forwards /v1/... through `client` (which signs)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, client: Client, port: int = 0, host: str = "127.0.0.1", accept_hosts: tuple[str, ...] = ()
    ) -> None:
        super().__init__((host, port), _Handler)
        self.client = client
        self.accepted_hosts = accepted_hosts(host, accept_hosts)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{tickwork_console.PREFIX}/"

    def start(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
