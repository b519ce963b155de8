"""Tenant isolation with forged request contexts (cursors included), and the identity -> tenant mapping."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import ACCOUNT, ACME, GLOBEX, build_event, role_identity

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _failed_run(api, pipeline, identity=ACME):
    job = api.create(identity=identity, payload={"fail_attempts": 9}, retry={"max_attempts": 1})
    run = api.post(f"/v1/jobs/{job['id']}/trigger", identity=identity).json
    pipeline.drain()
    return job, api.get(f"/v1/runs/{run['id']}", identity=identity).json


def test_another_tenant_can_neither_read_nor_change_nor_list(api, pipeline):
    job, failed = _failed_run(api, pipeline)
    ok = api.create(payload={"secret": 1})
    ok_run = api.post(f"/v1/jobs/{ok['id']}/trigger").json
    pipeline.drain()
    assert api.get(f"/v1/runs/{ok_run['id']}/result").json == {"secret": 1}
    before = api.get(f"/v1/jobs/{job['id']}").json
    pipeline.calls.clear()

    foreign = [
        ("GET", f"/v1/jobs/{job['id']}", None),
        ("PATCH", f"/v1/jobs/{job['id']}", {"name": "pwned"}),
        ("DELETE", f"/v1/jobs/{job['id']}", None),
        ("POST", f"/v1/jobs/{job['id']}/pause", None),
        ("POST", f"/v1/jobs/{job['id']}/resume", None),
        ("POST", f"/v1/jobs/{job['id']}/trigger", None),
        ("GET", f"/v1/jobs/{job['id']}/runs", None),
        ("GET", f"/v1/runs/{failed['id']}", None),
        ("POST", f"/v1/runs/{failed['id']}/retry", None),
        ("GET", f"/v1/runs/{ok_run['id']}/result", None),
    ]
    for method, path, body in foreign:
        reply = api.request(method, path, body=body, identity=GLOBEX)
        assert reply.status == 404, (method, path, reply.text)
        # Indistinguishable from an id that does not exist at all.
        unknown = path.replace(job["id"], "j" + "0" * 25).replace(ok["id"], "j" + "0" * 25)
        assert api.request(method, unknown, body=body, identity=GLOBEX).json["title"] == reply.json["title"]

    assert api.get("/v1/jobs", identity=GLOBEX).json == {"items": [], "next_cursor": None}
    assert api.get("/v1/dlq", identity=GLOBEX).json == {"items": [], "next_cursor": None}
    redrive = api.post("/v1/dlq/redrive", {"run_ids": [failed["id"]]}, identity=GLOBEX)
    assert redrive.json["redriven"] == 0
    assert redrive.json["not_redriven"] == [failed["id"]]
    assert api.post("/v1/dlq/redrive", {"all": True}, identity=GLOBEX).json["redriven"] == 0

    for op in ("PutItem", "UpdateItem", "SendMessage", "SendMessageBatch"):
        assert pipeline.calls.count(op) == 0, op
    assert api.get(f"/v1/jobs/{job['id']}").json == before
    assert api.get(f"/v1/runs/{failed['id']}").json["status"] == "FAILED"


def _two_tenants_with_pages(api, pipeline):
    for identity in (ACME, GLOBEX):
        for index in range(3):
            api.create(identity=identity, name=f"n{index}")
            pipeline.clock.advance(0.001)


def test_a_cursor_is_bound_to_its_tenant(api, pipeline):
    _two_tenants_with_pages(api, pipeline)
    acme_cursor = api.get("/v1/jobs", query={"limit": 1}, identity=ACME).json["next_cursor"]
    stolen = api.get("/v1/jobs", query={"limit": 1, "cursor": acme_cursor}, identity=GLOBEX)
    assert stolen.status == 400 or stolen.status == 422
    assert stolen.fields == ["cursor"]
    # The rightful owner pages on.
    assert api.get("/v1/jobs", query={"limit": 1, "cursor": acme_cursor}, identity=ACME).status == 200


def test_a_cursor_is_bound_to_its_listing(api, pipeline):
    job = api.create()
    other = api.create()
    for _ in range(3):
        api.post(f"/v1/jobs/{job['id']}/trigger")
        pipeline.clock.advance(1)
    runs_cursor = api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 1}).json["next_cursor"]
    assert runs_cursor
    assert api.get(f"/v1/jobs/{other['id']}/runs", query={"cursor": runs_cursor}).fields == ["cursor"]
    assert api.get("/v1/jobs", query={"cursor": runs_cursor}).fields == ["cursor"]
    assert api.get("/v1/dlq", query={"cursor": runs_cursor}).fields == ["cursor"]


def test_a_forged_cursor_cannot_reach_another_tenants_partition(api, pipeline):
    """Even with the MAC key, a cursor only positions inside the caller's own partition."""
    _two_tenants_with_pages(api, pipeline)
    cursors = pipeline.services.listings.cursors
    globex_jobs = api.get("/v1/jobs", identity=GLOBEX).json["items"]
    # acme forges a cursor (valid MAC for acme) whose position is a globex job's sort key.
    victim = globex_jobs[0]
    from tickwork.model.clock import as_utc, to_ms

    # tenant-index sort keys are <created ms>#<job id>; start just after the victim's.
    position = f"{to_ms(as_utc(victim['created_at'])) + 1:013d}#{victim['id']}"
    forged = cursors.encode("acme", "jobs", position)
    pipeline.calls.clear()
    page = api.get("/v1/jobs", query={"cursor": forged}, identity=ACME)
    assert page.status == 200
    assert {item["tenant"] for item in page.json["items"]} <= {"acme"}
    (query,) = pipeline.calls.params("Query")
    assert query["ExpressionAttributeValues"][":tk"] == {"S": "T#acme#JOB"}
    assert query["ExclusiveStartKey"]["tenant_key"] == {"S": "T#acme#JOB"}


def test_the_tenant_never_comes_from_the_body_or_headers(api):
    spoof = api.post(
        "/v1/jobs",
        {"name": "x", "type": "echo", "schedule": {"rate": "1 hour"}},
        headers={"X-Tenant": "globex", "X-Api-Key": "globex-key"},
        identity=ACME,
    )
    assert spoof.status == 201
    assert spoof.json["tenant"] == "acme"
    assert api.get("/v1/jobs", identity=GLOBEX).json["items"] == []


# ---------------------------------------------------------------- identity -> tenant (iam mode)


def _tenant_for(api, identity, *, api_account=ACCOUNT):
    event = build_event("GET", "/v1/jobs", identity=identity)
    event["requestContext"]["accountId"] = api_account
    reply = api.call(event)
    return reply


@pytest.mark.parametrize(
    ("identity", "tenant"),
    [
        (role_identity("tickwork-tenant-acme", session="bob"), "acme"),
        (role_identity("tickwork-tenant-acme", session="ci-42"), "acme"),
        (role_identity("deploy-bot"), f"{ACCOUNT}:role/deploy-bot"),
        (role_identity("tickwork-tenant-acme", account="210987654321"), "210987654321:role/tickwork-tenant-acme"),
        (
            {"accountId": ACCOUNT, "userArn": f"arn:aws:iam::{ACCOUNT}:user/ops/bob", "userId": "AIDA"},
            f"{ACCOUNT}:user/bob",
        ),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:iam::{ACCOUNT}:root", "userId": ACCOUNT}, f"{ACCOUNT}:root"),
    ],
    ids=["tenant role", "tenant role, other session", "other role", "tenant role of another account", "user", "root"],
)
def test_iam_identity_maps_to_a_tenant(api, identity, tenant):
    created = api.post("/v1/jobs", {"name": "x", "type": "echo", "schedule": {"rate": "1 hour"}}, identity=identity)
    assert created.status == 201, created.text
    assert created.json["tenant"] == tenant


@pytest.mark.parametrize(
    ("identity", "status"),
    [
        (None, 401),
        ({"accountId": ACCOUNT, "userArn": ""}, 401),
        ({"accountId": ACCOUNT, "userArn": "not-an-arn"}, 401),
        ({"accountId": "999999999999", "userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/tickwork-tenant-acme/x"}, 403),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:sts::{ACCOUNT}:federated-user/alice"}, 403),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/tickwork-tenant-/x"}, 403),
    ],
    ids=["no authorizer", "empty arn", "garbage arn", "inconsistent account", "federated user", "empty tenant name"],
)
def test_callers_without_a_usable_identity_are_refused_before_anything_else(api, pipeline, identity, status):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "bad", "priority": 99}, identity=identity)  # also invalid: auth goes first
    assert reply.status == status
    assert reply.headers["content-type"] == "application/problem+json"
    assert set(pipeline.calls.by_operation()) <= {"ListRoleTags"}  # the caller's role's tags, nothing else


def test_health_and_openapi_need_no_tenant(api):
    assert api.get("/v1/health", identity=None).status == 200
    assert api.get("/v1/openapi.json", identity=None).status == 200


# ---------------------------------------------------------------- local mode


def test_local_mode_without_keys_is_tenant_default(api, monkeypatch):
    monkeypatch.setenv("API_AUTH_MODE", "local")
    created = api.post("/v1/jobs", {"name": "x", "type": "echo", "schedule": {"rate": "1 hour"}}, identity=None)
    assert created.json["tenant"] == "default"


def test_local_mode_with_a_keys_file_maps_keys_to_tenants(api, monkeypatch, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-acme": "acme", "k-globex": "globex"}))
    monkeypatch.setenv("API_AUTH_MODE", "local")
    monkeypatch.setenv("API_KEYS_FILE", str(keys))
    body = {"name": "x", "type": "echo", "schedule": {"rate": "1 hour"}}
    job = api.post("/v1/jobs", body, headers={"X-Api-Key": "k-acme"}, identity=None).json
    assert job["tenant"] == "acme"
    assert api.get(f"/v1/jobs/{job['id']}", headers={"X-Api-Key": "k-globex"}, identity=None).status == 404
    assert api.get(f"/v1/jobs/{job['id']}", headers={"X-Api-Key": "k-acme"}, identity=None).status == 200
    missing = api.get("/v1/jobs", identity=None)
    assert missing.status == 401
    assert api.get("/v1/jobs", headers={"X-Api-Key": "nope"}, identity=None).status == 401
    # An IAM context is ignored in local mode: the key decides.
    assert api.get(f"/v1/jobs/{job['id']}", headers={"X-Api-Key": "k-globex"}, identity=ACME).status == 404
