"""API fixtures: HTTP API v2 events built from events/api-*.json, with forged IAM identities per tenant."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

from tests.conftest import load_event

ACCOUNT = "123456789012"


def role_identity(role: str, account: str = ACCOUNT, session: str = "alice") -> dict[str, Any]:
    return {
        "accessKey": "ASIAEXAMPLEKEY",
        "accountId": account,
        "callerId": f"AROAEXAMPLE:{session}",
        "cognitoIdentity": None,
        "principalOrgId": None,
        "userArn": f"arn:aws:sts::{account}:assumed-role/{role}/{session}",
        "userId": f"AROAEXAMPLE:{session}",
    }


ACME = role_identity("tickwork-tenant-acme")
GLOBEX = role_identity("tickwork-tenant-globex", session="mallory")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def fields(self) -> list[str]:
        return [e["field"] for e in self.json.get("errors", [])]


def build_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw_body: str | None = None,
    query: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    identity: dict[str, Any] | None = ACME,
) -> dict[str, Any]:
    """A request as API Gateway (HTTP API, payload v2, IAM auth) hands it to the function."""
    event = copy.deepcopy(load_event("api-create-job.json" if method in ("POST", "PATCH") else "api-get-job.json"))
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["rawQueryString"] = urlencode(query or {})
    if query:
        event["queryStringParameters"] = {k: str(v) for k, v in query.items()}
    else:
        event.pop("queryStringParameters", None)
    if identity is None:
        event["requestContext"].pop("authorizer", None)
    else:
        event["requestContext"]["authorizer"] = {"iam": identity}
    for name, value in (headers or {}).items():
        event["headers"][name.lower()] = value
    if raw_body is not None:
        event["body"] = raw_body
    elif body is not None:
        event["body"] = json.dumps(body)
    else:
        event.pop("body", None)
    return event


class ApiClient:
    def __init__(self, pipeline: Any, app: Any = None) -> None:
        from api import app as api_app

        self.pipeline = pipeline
        self.app = app or api_app

    def call(self, event: dict[str, Any]) -> Reply:
        response = self.app.handler(event, LocalLambdaContext("ApiFunction", 10))
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        return Reply(response["statusCode"], headers, response.get("body") or "")

    def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        return self.call(build_event(method, path, **kwargs))

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.request("POST", path, body=body, **kwargs)

    def patch(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.request("PATCH", path, body=body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Reply:
        return self.request("DELETE", path, **kwargs)

    def create(self, identity: dict[str, Any] = ACME, **spec: Any) -> dict[str, Any]:
        spec.setdefault("name", "test job")
        spec.setdefault("type", "echo")
        spec.setdefault("schedule", {"rate": "1 hour"})
        reply = self.post("/v1/jobs", spec, identity=identity)
        assert reply.status == 201, reply.text
        return reply.json


@pytest.fixture
def api(pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiClient]:
    from api import app as api_app

    monkeypatch.setenv("API_AUTH_MODE", "iam")
    monkeypatch.delenv("API_KEYS_FILE", raising=False)
    api_app.use_services(pipeline.services)
    try:
        yield ApiClient(pipeline)
    finally:
        api_app.use_services(None)


def separate_environments(pipeline: Any, count: int) -> list[ApiClient]:
    """`count` API clients, each calling its own instance of the API's handler module on the pipeline's services: as
    many Lambda execution environments, each serving one invocation at a time, as Lambda (and the local runtime,
    tickwork_local.runtime.lambda_runtime) runs them. Calls racing from threads need them: one module's Powertools
    resolver holds the request it is resolving, so two invocations at once in one module are not a thing Lambda
    does, and they break each other (each environment's resolver holds its own: load_handler_module)."""
    from tickwork_local.runtime.lambda_runtime import function_config, load_handler_module
    from tickwork_local.stack.template import load_template

    config = function_config(load_template(), "ApiFunction")
    clients = []
    for _ in range(count):
        module = load_handler_module(config)
        module.use_services(pipeline.services)
        clients.append(ApiClient(pipeline, module))
    return clients
