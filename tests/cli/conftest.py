"""CLI fixtures: typer's runner, with the CLI's HTTP transport wired straight into the API handler."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit

import pytest
from typer.testing import CliRunner

from tests.api.conftest import ACME, build_event


@dataclass
class HandlerTransport:
    """Plays API Gateway between the CLI and the handler: HTTP request -> v2 event -> HTTP response."""

    identity: dict[str, Any] | None = field(default_factory=lambda: ACME)
    sent: list[tuple[str, str, dict[str, str], bytes | None]] = field(default_factory=list)
    # Each answer the handler gave, as sent: (method, url, status, body).
    answered: list[tuple[str, str, int, bytes]] = field(default_factory=list)
    # The functions' own output (their EMF lines), which is not the CLI's: the test's, as when it was made.
    function_stdout: TextIO = field(default_factory=lambda: sys.stdout)

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> Any:
        from api import app as api_app
        from tickwork_cli.client import HttpResponse
        from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

        self.sent.append((method, url, dict(headers), body))
        parts = urlsplit(url)
        event = build_event(
            method,
            parts.path,
            raw_body=body.decode() if body is not None else None,
            query=dict(parse_qsl(parts.query)) or None,
            headers=headers,
            identity=self.identity,
        )
        if body is None:
            event.pop("body", None)
        with redirect_stdout(self.function_stdout):
            response = api_app.handler(event, LocalLambdaContext("ApiFunction", 10))
        answer = HttpResponse(
            response["statusCode"], response.get("headers") or {}, (response.get("body") or "").encode()
        )
        self.answered.append((method, url, answer.status, answer.body))
        return answer


@dataclass
class Cli:
    runner: CliRunner
    transport: HandlerTransport
    pipeline: Any
    url: str = "http://127.0.0.1:3000"

    def __call__(self, *args: str, output: str | None = "json", input: str | None = None) -> Any:
        from tickwork_cli.main import app

        argv = [*args, "--api-url", self.url]
        if output:
            argv += ["--output", output]
        return self.runner.invoke(app, argv, input=input, catch_exceptions=False)

    def json(self, *args: str) -> Any:
        result = self(*args)
        assert result.exit_code == 0, result.output + result.stderr
        return json.loads(result.stdout)


@pytest.fixture
def cli(pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    from api import app as api_app
    from tickwork_cli import client, clock

    monkeypatch.setenv("API_AUTH_MODE", "local")
    monkeypatch.delenv("API_KEYS_FILE", raising=False)
    monkeypatch.delenv("TICKWORK_API_URL", raising=False)
    transport = HandlerTransport(identity=None)
    monkeypatch.setattr(client, "transport", transport)
    monkeypatch.setattr(clock, "now", pipeline.clock.now)

    def sleep(seconds: float) -> None:
        """While the CLI waits, the scheduler works: time passes, the tick claims, executors run."""
        pipeline.clock.advance(seconds)
        with redirect_stdout(transport.function_stdout):
            pipeline.tick()
            pipeline.drain()

    monkeypatch.setattr(clock, "sleep", sleep)
    api_app.use_services(pipeline.services)
    try:
        yield Cli(CliRunner(), transport, pipeline)
    finally:
        api_app.use_services(None)
