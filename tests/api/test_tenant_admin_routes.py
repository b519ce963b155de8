"""/v1/tenants: an admin sets and reads any tenant's settings, a tenant reads its own; others get 403."""

from __future__ import annotations

import json

import pytest
from tickwork.model.errors import InvalidInput
from tickwork.model.tenant_settings import TenantSettings

from tests.api.conftest import ACME, GLOBEX, role_identity

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ADMIN = role_identity("tickwork-admin", session="ops")
SETTINGS = {
    "weight": 3,
    "max_active_jobs": 2,
    "max_runs_per_minute": 60,
    "max_concurrent_runs": 4,
    "dispatch_order": "sjf",
}


def put(api, tenant, body, identity=ADMIN, **kwargs):
    return api.request("PUT", f"/v1/tenants/{tenant}", body=body, identity=identity, **kwargs)


def test_admin_puts_then_reads_a_tenants_settings(api):
    reply = put(api, "acme", SETTINGS)
    assert reply.status == 200, reply.text
    assert reply.json == SETTINGS
    view = api.get("/v1/tenants/acme", identity=ADMIN)
    assert view.status == 200
    assert view.json == {"tenant": "acme", "settings": SETTINGS, "usage": {"active_jobs": 0}}
    # The tenant sees its own, through /me (not a tenant named "me").
    assert api.get("/v1/tenants/me", identity=ACME).json == view.json


def test_put_replaces_the_whole_document_and_the_defaults_show_when_nothing_is_set(api):
    assert put(api, "acme", SETTINGS).status == 200
    replaced = {
        "weight": 1,
        "max_active_jobs": None,
        "max_runs_per_minute": 10,
        "max_concurrent_runs": None,
        "dispatch_order": "edf",  # the default shows
    }
    assert put(api, "acme", {"max_runs_per_minute": 10}).json == replaced
    view = api.get("/v1/tenants/acme", identity=ADMIN).json
    assert view["settings"] == replaced
    assert view["usage"] == {"active_jobs": None}  # not counted without the quota
    fresh = api.get("/v1/tenants/me", identity=GLOBEX).json
    assert fresh["tenant"] == "globex"
    assert fresh["settings"]["weight"] == 1
    assert fresh["usage"] == {"active_jobs": None}


def test_a_put_reaches_this_process_at_once(api, pipeline):
    directory = pipeline.services.tenant_directory
    assert directory.settings_of("acme").weight == 1  # cached
    assert put(api, "acme", {"weight": 7}).status == 200
    assert directory.settings_of("acme").weight == 7


def test_tenants_that_are_not_admins_get_403_and_nothing_is_written(api, pipeline):
    pipeline.calls.clear()
    other_account_admin = role_identity("tickwork-admin", account="210987654321")
    for identity in (ACME, other_account_admin):
        refused = put(api, "acme", SETTINGS, identity=identity)
        assert refused.status == 403, refused.text
        assert "an admin is needed" in refused.json["detail"]
        assert api.get("/v1/tenants/acme", identity=identity).status == 403
        assert api.get("/v1/tenants/globex", identity=identity).status == 403
    # Even bad input from a non-admin is a 403, not a 422 that would tell it about the route.
    assert put(api, "acme", {"weight": 0}, identity=ACME).status == 403
    assert pipeline.calls.count("PutItem") == 0
    assert api.get("/v1/tenants/me", identity=ACME).status == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"weight": 0}, "weight"),
        ({"weight": 101}, "weight"),
        ({"weight": "3"}, "weight"),
        ({"max_active_jobs": 0}, "max_active_jobs"),
        ({"max_runs_per_minute": -1}, "max_runs_per_minute"),
        ({"max_concurrent_runs": 1.5}, "max_concurrent_runs"),
        ({"max_jobs": 3}, "max_jobs"),
    ],
)
def test_bad_settings_are_422_naming_the_field_and_write_nothing(api, pipeline, body, field):
    pipeline.calls.clear()
    reply = put(api, "acme", body)
    assert reply.status == 422, reply.text
    assert reply.fields == [field]
    assert pipeline.calls.count("PutItem") == 0
    assert api.get("/v1/tenants/acme", identity=ADMIN).json["settings"]["weight"] == 1


def test_a_bad_tenant_name_is_422_on_tenant(api, pipeline):
    pipeline.calls.clear()
    for name in ("bad%23name", "a" * 129, "sp%20ace"):
        reply = put(api, name, SETTINGS)
        assert reply.status == 422, (name, reply.text)
        assert reply.fields == ["tenant"]
        assert api.get(f"/v1/tenants/{name}", identity=ADMIN).fields == ["tenant"]
    assert pipeline.calls.count("PutItem") == 0


def test_an_iam_tenant_name_is_sent_percent_encoded(api):
    name = "210987654321:role/ops"
    assert put(api, "210987654321:role%2Fops", {"weight": 2}).status == 200
    assert api.get("/v1/tenants/210987654321:role%2Fops", identity=ADMIN).json["tenant"] == name


def test_a_put_without_a_body_or_not_json(api):
    missing = api.request("PUT", "/v1/tenants/acme", identity=ADMIN)
    assert missing.status == 422
    assert missing.fields == ["body"]
    form = put(api, "acme", None, raw_body="weight=3", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status == 415


def test_the_admin_has_its_own_tenant_for_jobs(api):
    job = api.create(identity=ADMIN)
    assert job["tenant"] == "123456789012:role/tickwork-admin"
    assert api.get("/v1/tenants/me", identity=ADMIN).json["tenant"] == "123456789012:role/tickwork-admin"


def test_the_routes_are_in_the_openapi_document(api):
    doc = json.loads(api.get("/v1/openapi.json").text)
    assert set(doc["paths"]["/v1/tenants/{tenant}"]) == {"get", "put"}
    assert set(doc["paths"]["/v1/tenants/me"]) == {"get"}
    assert "429" in doc["paths"]["/v1/jobs"]["post"]["responses"]
    assert "429" in doc["paths"]["/v1/workflows"]["post"]["responses"]
    assert "TenantSettings" in doc["components"]["schemas"]


# ---------------------------------------------------------------- local mode: open, or admin keys


def test_local_open_mode_is_an_admin(api, monkeypatch):
    monkeypatch.setenv("API_AUTH_MODE", "local")
    assert put(api, "acme", {"weight": 5}, identity=None).status == 200
    assert api.get("/v1/tenants/me", identity=None).json["tenant"] == "default"


def test_local_keys_file_admin_keys_and_403_for_the_others(api, monkeypatch, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-acme": "acme", "k-ops": {"tenant": "ops", "admin": True}, "k-b": {"tenant": "b"}}))
    monkeypatch.setenv("API_AUTH_MODE", "local")
    monkeypatch.setenv("API_KEYS_FILE", str(keys))
    for key in ("k-acme", "k-b"):
        refused = put(api, "acme", {"weight": 5}, identity=None, headers={"X-Api-Key": key})
        assert refused.status == 403, refused.text
        assert "an admin is needed" in refused.json["detail"]
    assert put(api, "acme", {"weight": 5}, identity=None, headers={"X-Api-Key": "k-ops"}).status == 200
    assert api.get("/v1/tenants/me", identity=None, headers={"X-Api-Key": "k-acme"}).json["settings"]["weight"] == 5
    assert api.get("/v1/tenants/me", identity=None, headers={"X-Api-Key": "k-ops"}).json["tenant"] == "ops"
    assert api.get("/v1/tenants/me", identity=None).status == 401


def test_me_names_no_tenant_to_set(api, pipeline):
    pipeline.calls.clear()
    for identity in (ADMIN, ACME):
        reply = put(api, "me", SETTINGS, identity=identity)
        assert reply.status == 405
        assert reply.headers["allow"] == "GET"
    assert pipeline.calls.count("PutItem") == 0
    # The domain refuses it too, should another edge call it.
    with pytest.raises(InvalidInput, match="tenant"):
        pipeline.services.tenants.put("me", TenantSettings())


def test_other_methods_are_405_for_everyone(api):
    for identity in (ADMIN, ACME):
        for path in ("/v1/tenants/acme", "/v1/tenants/me"):
            reply = api.request("DELETE", path, identity=identity)
            assert reply.status == 405, (path, reply.text)
    assert api.request("PATCH", "/v1/tenants/acme", body={"weight": 2}, identity=ACME).headers["allow"] == "GET, PUT"
