"""Secrets by reference through the API: a reference the tenant may not name (another tenant's, outside the stack's
SecretNamePrefix) or a malformed one is a 422 naming its field, at create, at PATCH, in a trigger's payload, in a
workflow's step and its compensation, and nothing is written; an allowed reference is stored and returned as
written (the caller is tenant acme: its secrets are under tickwork/acme/)."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.api.test_workflow_routes import DIAMOND, with_step
from tests.conftest import ROOT

WRITES = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:TransactWriteItems", "sqs:SendMessage")
OURS = {"$secret": "tickwork/acme/api-token"}
THEIRS = {"$secret": "tickwork/globex/api-token"}


def _bearer(reference: dict[str, str]) -> dict[str, Any]:
    return {
        "name": "calls with a token",
        "type": "http",
        "schedule": {"rate": "1 hour"},
        "payload": {"url": "https://example.com/hook", "headers": {"Authorization": reference}},
    }


def test_a_reference_to_the_tenants_own_secret_is_stored_and_returned_as_written(api):
    created = api.post("/v1/jobs", _bearer(OURS))
    assert created.status == 201, created.text
    assert created.json["payload"]["headers"] == {"Authorization": OURS}
    assert api.get(f"/v1/jobs/{created.json['id']}").json["payload"]["headers"] == {"Authorization": OURS}


def test_another_tenants_secret_is_422_at_create_naming_the_field_and_writes_nothing(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _bearer(THEIRS))
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.headers.Authorization"]
    message = reply.json["errors"][0]["message"]
    assert "tickwork/globex/api-token" in message
    assert "tickwork/acme/" in message  # what the tenant may name
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def test_a_reference_anywhere_in_a_payload_is_checked_where_it_is(api):
    body = {
        "name": "echoes",
        "type": "echo",
        "schedule": {"rate": "1 hour"},
        "payload": {"config": {"credentials": [{"$parameter": "/other/acme/password"}]}},
    }
    reply = api.post("/v1/jobs", body)
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.config.credentials[0]"]


def test_a_malformed_reference_is_422_naming_the_field(api):
    reply = api.post("/v1/jobs", _bearer({"$secret": "tickwork/acme/token", "version": "AWSPREVIOUS"}))
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.headers.Authorization"]
    assert "one key" in reply.json["errors"][0]["message"]


def test_a_references_refusal_and_the_models_other_errors_are_named_together(api):
    body = _bearer(THEIRS)
    body["payload"]["method"] = "BREW"
    reply = api.post("/v1/jobs", body)
    assert reply.status == 422, reply.text
    assert sorted(reply.fields) == ["payload.headers.Authorization", "payload.method"]


def test_a_query_parameter_takes_a_reference_and_is_checked_too(api):
    body = _bearer(OURS)
    body["payload"]["query"] = {"api_key": {"$parameter": "/tickwork/globex/key"}}
    reply = api.post("/v1/jobs", body)
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.query.api_key"]


def test_a_patch_to_another_tenants_secret_is_422_and_changes_nothing(api):
    job = api.post("/v1/jobs", _bearer(OURS)).json
    patched = {"payload": {**job["payload"], "headers": {"Authorization": THEIRS}}}
    reply = api.patch(f"/v1/jobs/{job['id']}", patched)
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.headers.Authorization"]
    assert api.get(f"/v1/jobs/{job['id']}").json["payload"]["headers"] == {"Authorization": OURS}


def test_a_triggers_payload_is_checked_alike(api):
    job = api.post("/v1/jobs", _bearer(OURS)).json
    payload = {**job["payload"], "headers": {"Authorization": THEIRS}}
    reply = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": payload})
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.headers.Authorization"]


def test_a_workflow_step_and_its_compensation_are_checked_alike(api):
    step = {"type": "http", "payload": {"url": "https://example.com/", "headers": {"Authorization": THEIRS}}}
    reply = api.post("/v1/workflows", with_step(DIAMOND, "a", **step))
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[0].payload.headers.Authorization"]
    undo = {"compensate": {"type": "echo", "payload": {"token": THEIRS}}}
    reply = api.post("/v1/workflows", with_step(DIAMOND, "a", **undo))
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[0].compensate.payload.token"]
    ours = {"type": "http", "payload": {"url": "https://example.com/", "headers": {"Authorization": OURS}}}
    created = api.post("/v1/workflows", with_step(DIAMOND, "a", **ours))
    assert created.status == 201, created.text
    assert created.json["steps"][0]["payload"]["headers"] == {"Authorization": OURS}


def test_the_docs_http_payload_with_references_is_accepted_as_written(api):
    """docs/job-types.md, "Secrets by reference": its JSON example, for tenant acme."""
    page = (ROOT / "docs" / "job-types.md").read_text()
    section = page.split("## Secrets by reference", 1)[1]
    example = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    created = api.post("/v1/jobs", {"name": "sync", "type": "http", "schedule": {"rate": "1 hour"}, "payload": example})
    assert created.status == 201, created.text
    assert created.json["payload"] == example


def test_a_secret_by_another_accounts_arn_is_422_at_create(api):
    theirs = {"$secret": "arn:aws:secretsmanager:us-east-1:999999999999:secret:tickwork/acme/api-token-AbCdEf"}
    reply = api.post("/v1/jobs", _bearer(theirs))
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.headers.Authorization"]
    assert "arn:aws:secretsmanager:us-east-1:123456789012:secret:" in reply.json["errors"][0]["message"]
    ours = {"$secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:tickwork/acme/api-token-AbCdEf"}
    assert api.post("/v1/jobs", _bearer(ours)).status == 201


def test_a_variant_s_payload_names_the_tenant_s_own_secrets_only_and_keeps_them_by_reference(api):
    theirs = {
        **_bearer(OURS),
        "variants": [{"name": "v2", "weight": 10, "payload": {"headers": {"Authorization": THEIRS}}}],
    }
    reply = api.post("/v1/jobs", theirs)
    assert reply.status == 422, reply.text
    assert reply.fields == ["variants[0].payload.headers.Authorization"]
    ours = {**_bearer(OURS), "variants": [{"name": "v2", "weight": 10, "payload": {"headers": {"X-Other": OURS}}}]}
    created = api.post("/v1/jobs", ours)
    assert created.status == 201, created.text
    assert api.get(f"/v1/jobs/{created.json['id']}").json["variants"][0]["payload"] == {"headers": {"X-Other": OURS}}
    patched = api.patch(
        f"/v1/jobs/{created.json['id']}",
        {"variants": [{"name": "v2", "weight": 10, "payload": {"headers": {"X-Other": THEIRS}}}]},
    )
    assert patched.status == 422, patched.text
    assert patched.fields == ["variants[0].payload.headers.X-Other"]
