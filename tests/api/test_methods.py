"""A wrong method on a known path: 405 with an Allow header naming the methods it takes, as problem+json."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from tickwork_local.runtime.apigateway import ApiGatewayServer
from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

from tests.api.conftest import ACME
from tests.api.test_bad_input import WRITES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/v1/jobs", "GET, POST"),
        ("DELETE", "/v1/jobs", "GET, POST"),
        ("PUT", "/v1/jobs/j01m7yzmhg0000000000000000", "GET, PATCH, DELETE"),
        ("POST", "/v1/jobs/j01m7yzmhg0000000000000000", "GET, PATCH, DELETE"),
        ("GET", "/v1/jobs/j01m7yzmhg0000000000000000/pause", "POST"),
        ("DELETE", "/v1/jobs/j01m7yzmhg0000000000000000/runs", "GET"),
        ("PATCH", "/v1/runs/j01m7yzmhg0000000000000000.1795262400000", "GET"),
        ("GET", "/v1/runs/j01m7yzmhg0000000000000000.1795262400000/retry", "POST"),
        ("POST", "/v1/dlq", "GET"),
        ("GET", "/v1/dlq/redrive", "POST"),
        # HEAD and OPTIONS are not served (no CORS, no bodiless GET): the answer says what is.
        ("HEAD", "/v1/jobs", "GET, POST"),
        ("OPTIONS", "/v1/jobs/j01m7yzmhg0000000000000000", "GET, PATCH, DELETE"),
        ("TRACE", "/v1/dlq", "GET"),
    ],
)
def test_a_wrong_method_on_a_known_path_is_405_with_allow(api, pipeline, method, path, allow):
    pipeline.calls.clear()
    reply = api.request(method, path)
    assert reply.status == 405, reply.text
    assert reply.headers["allow"] == allow
    assert reply.headers["content-type"] == "application/problem+json"
    problem = reply.json
    assert problem["status"] == 405
    assert problem["type"] == "urn:tickwork:problem:method-not-allowed"
    assert problem["title"] == "Method not allowed"
    assert problem["detail"] == f"{path} takes {allow}, not {method}"
    assert problem["instance"] == path
    assert problem["errors"] == []
    assert set(pipeline.calls.by_operation()) <= {"ListRoleTags"}  # the caller's role's tags, nothing else


def test_public_paths_answer_405_without_an_identity(api):
    for method in ("POST", "DELETE"):
        for path in ("/v1/health", "/v1/openapi.json"):
            reply = api.request(method, path, identity=None)
            assert (reply.status, reply.headers["allow"]) == (405, "GET"), (method, path)


def test_a_wrong_method_with_a_json_body_writes_nothing(api, pipeline):
    job = api.create()
    pipeline.calls.clear()
    reply = api.request("PUT", f"/v1/jobs/{job['id']}", body={"name": "renamed"})
    assert reply.status == 405
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get(f"/v1/jobs/{job['id']}").json["name"] == job["name"]


def test_the_caller_is_authenticated_before_the_method_is_judged(api):
    reply = api.request("PUT", "/v1/jobs", identity=None)
    assert reply.status == 401
    assert "allow" not in reply.headers


def test_an_unknown_path_is_still_404(api):
    for method in ("GET", "PUT"):
        reply = api.request(method, "/v1/nowhere")
        assert reply.status == 404
        assert "allow" not in reply.headers
        assert reply.json["detail"] == f"no route {method} /v1/nowhere"


def test_a_method_the_path_takes_with_an_unroutable_id_is_404(api):
    # A double quote is outside what a route's id may hold: no route, though GET is among the path's methods.
    reply = api.get('/v1/jobs/a"b')
    assert reply.status == 404
    assert "allow" not in reply.headers


@pytest.mark.parametrize("method", ["QUERY", "PROPFIND", "MKCOL"])
def test_the_local_api_gateway_passes_an_undeclared_method_to_the_handler_for_its_405(api, method):
    """API Gateway passes any method to the function; the local stand-in answered a 501 HTML page itself."""

    def invoke(event: dict[str, Any]) -> Any:
        event["requestContext"]["authorizer"] = {"iam": ACME}
        return api.app.handler(event, LocalLambdaContext("ApiFunction", 10))

    server = ApiGatewayServer(("127.0.0.1", 0), invoke)
    server.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request(method, "/v1/dlq")
        response = connection.getresponse()
        body = response.read()
        connection.close()
    finally:
        server.stop()
    assert response.status == 405, body
    assert response.getheader("Allow") == "GET"
    assert response.getheader("Content-Type") == "application/problem+json"
    assert json.loads(body)["detail"] == f"/v1/dlq takes GET, not {method}"
