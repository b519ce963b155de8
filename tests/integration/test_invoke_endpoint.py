"""The Invoke endpoint of `tickwork dev --built` (tickwork_local.function_invokes.InvokeEndpoint): the functions'
processes call Lambda over HTTP, so the job sandbox this node plays is answered there, as Lambda answers a
synchronous Invoke through boto3; any other request goes on to the local endpoint as it came."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from tickwork_local.function_invokes import InvokeEndpoint, LocalInvokes


class Sandbox:
    def invoke(self, event: Any) -> Any:
        if event.get("fail"):
            raise RuntimeError("the handler failed")
        return {"echo": event}


class Upstream(BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Upstream.paths.append(self.path)
        body = json.dumps({"from": "upstream"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def lambda_client() -> Iterator[Any]:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    invokes = LocalInvokes()
    invokes.serve("stack-JobSandboxFunction", Sandbox())
    endpoint = InvokeEndpoint(invokes, f"http://127.0.0.1:{upstream.server_address[1]}")
    endpoint.start()
    try:
        yield boto3.client(
            "lambda",
            endpoint_url=endpoint.url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
    finally:
        endpoint.stop()
        upstream.shutdown()


def test_the_played_function_answers_as_lambda_and_any_other_goes_to_the_local_endpoint(lambda_client):
    answer = lambda_client.invoke(FunctionName="stack-JobSandboxFunction", Payload=json.dumps({"a": 1}))
    assert (answer["StatusCode"], "FunctionError" in answer) == (200, False)
    assert json.loads(answer["Payload"].read()) == {"echo": {"a": 1}}

    failed = lambda_client.invoke(FunctionName="stack-JobSandboxFunction", Payload=json.dumps({"fail": True}))
    assert failed["FunctionError"] == "Unhandled"
    assert json.loads(failed["Payload"].read()) == {"errorType": "RuntimeError", "errorMessage": "the handler failed"}

    Upstream.paths = []
    other = lambda_client.invoke(FunctionName="tickwork-job-report", Payload=b"{}")
    assert json.loads(other["Payload"].read()) == {"from": "upstream"}
    assert Upstream.paths == ["/2015-03-31/functions/tickwork-job-report/invocations"]
