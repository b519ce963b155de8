"""A request through the stack's TokenApi (a JWT authorizer; docs/security.md "Sign-in with tokens (JWT)") reaches
the real handler with the token's claims: the job is its tenant's, its audit record's actor the token's subject."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.api.conftest import ACME, GLOBEX, ApiClient
from tests.api.test_audit_trail import audit_items
from tests.conftest import load_event

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE"
SUBJECT = "8f0c5a3e-1b2d-4c6e-9f7a-0b1c2d3e4f5a"


@pytest.fixture
def tokens(api: ApiClient, monkeypatch: pytest.MonkeyPatch) -> ApiClient:
    """The API as the template wires it with the user pool: its issuer, and Cognito's groups claim."""
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("JWT_TENANT_CLAIM", "cognito:groups")
    return api


def _token_event(groups: str | None = None) -> dict[str, Any]:
    event = copy.deepcopy(load_event("api-jwt-create-job.json"))
    if groups is not None:
        event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = groups
    return event


def test_a_token_s_job_is_its_claim_s_tenant_s_and_its_actor_the_token_s_subject(tokens: ApiClient, pipeline: Any):
    reply = tokens.call(_token_event())
    assert reply.status == 201, reply.text
    job = reply.json
    # The SigV4 role of the same tenant sees it; another tenant does not.
    assert tokens.get(f"/v1/jobs/{job['id']}", identity=ACME).status == 200
    assert tokens.get(f"/v1/jobs/{job['id']}", identity=GLOBEX).status == 404
    (record,) = audit_items(pipeline)
    assert record["tenant"] == "acme"
    assert (record["action"], record["resource"]) == ("job.create", {"kind": "job", "id": job["id"]})
    assert record["actor"] == {"kind": "jwt", "id": SUBJECT, "display": "alice@example.com"}
    assert record["user_agent"] == "curl/8.5.0"


@pytest.mark.parametrize(
    ("groups", "detail"),
    [
        ("[tickwork-tenant-acme tickwork-tenant-globex]", "names 2 tenants"),
        ("[developers]", "names no tenant"),
    ],
)
def test_a_token_naming_two_tenants_or_none_is_a_403_that_changes_nothing(
    tokens: ApiClient, pipeline: Any, groups: str, detail: str
):
    reply = tokens.call(_token_event(groups))
    assert reply.status == 403, reply.text
    assert detail in reply.json["detail"]
    assert tokens.get("/v1/jobs", identity=ACME).json["items"] == []
    assert audit_items(pipeline) == []


def test_a_token_on_a_stack_without_an_issuer_is_a_401(api: ApiClient, pipeline: Any):
    reply = api.call(_token_event())
    assert reply.status == 401, reply.text
    assert "accepts no tokens" in reply.json["detail"]
    assert audit_items(pipeline) == []


def test_nothing_in_the_body_or_headers_chooses_a_token_s_tenant(tokens: ApiClient):
    in_body = _token_event()
    in_body["body"] = json.dumps({**json.loads(in_body["body"]), "tenant": "globex"})
    refused = tokens.call(in_body)
    assert (refused.status, refused.fields) == (422, ["tenant"])
    in_header = _token_event()
    in_header["headers"]["x-tickwork-tenant"] = "globex"
    assert tokens.call(in_header).status == 201
    assert tokens.get("/v1/jobs", identity=GLOBEX).json["items"] == []
    assert len(tokens.get("/v1/jobs", identity=ACME).json["items"]) == 1
