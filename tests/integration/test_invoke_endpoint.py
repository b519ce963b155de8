"""The Invoke endpoint of `tickwork dev --built` (tickwork_local.runtime.function_invokes.InvokeEndpoint): the functions'
processes call Lambda over HTTP, so the job sandbox this node plays is answered there, as Lambda answers a
synchronous Invoke through boto3; any other request goes on to the local endpoint as it came."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from tickwork_local.runtime.function_invokes import InvokeEndpoint, LocalInvokes

from tests.http_upstream import JsonUpstream, serving


class Sandbox:
    def invoke(self, event: Any) -> Any:
        if event.get("fail"):
            raise RuntimeError("the handler failed")
        return {"echo": event}


class Upstream(JsonUpstream):
    paths: list[str] = []

    def do_POST(self) -> None:
        self.read_body()
        Upstream.paths.append(self.path)
        self.answer({"from": "upstream"})


@pytest.fixture
def lambda_client() -> Iterator[Any]:
    with serving(Upstream) as upstream:
        invokes = LocalInvokes()
        invokes.serve("stack-JobSandboxFunction", Sandbox())
        endpoint = InvokeEndpoint(invokes, upstream)
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
