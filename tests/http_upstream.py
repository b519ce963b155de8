"""A local HTTP server for the tests that need something at the other end of a request: a handler class answers,
and `serving` runs it on a free port for the length of a `with`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonUpstream(BaseHTTPRequestHandler):
    """A handler that reads a request body whole and answers with JSON (or as it likes); it logs nothing."""

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, body: Any, headers: dict[str, str] | None = None, status: int = 200) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The handler served on 127.0.0.1 at a free port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class PresignedPuts(JsonUpstream):
    """The end of CloudFormation's pre-signed response URL: each JSON body PUT to it, kept in order, with its path
    and Content-Type (reset `answers` before a test)."""

    answers: list[dict[str, Any]] = []

    def do_PUT(self) -> None:
        body = self.read_body()
        PresignedPuts.answers.append(
            {"path": self.path, "content_type": self.headers.get("Content-Type"), "size": len(body), **json.loads(body)}
        )
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
