"""POST /v1/bulk/jobs: pause, resume or cancel jobs chosen by tags, ids or all; answered per job (ok, already,
not_found, refused with the reason), idempotent, at most 100 a request (then next_cursor), each change audited,
and never another tenant's job."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ACME, GLOBEX

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def bulk(api, action: str, selector: dict[str, Any], **kwargs: Any) -> Any:
    return api.post("/v1/bulk/jobs", {"action": action, "selector": selector}, **kwargs)


def outcomes(reply) -> dict[str, str]:
    assert reply.status == 200, reply.text
    return {item["job_id"]: item["outcome"] for item in reply.json["items"]}


def test_pause_three_jobs_by_tag_then_again_is_already_and_each_change_is_audited(api, pipeline):
    data = [api.create(name=f"d{i}", tags={"team": "data", "tier": "1"}) for i in range(3)]
    other = api.create(name="ops", tags={"team": "ops"})
    theirs = api.create(identity=GLOBEX, name="theirs", tags={"team": "data", "tier": "1"})

    pipeline.calls.clear()
    first = bulk(api, "pause", {"tags": {"team": "data", "tier": "1"}})
    assert pipeline.calls.count("Scan") == 0  # the tenant's jobs listing: a Query of tenant-index
    listings = [q for q in pipeline.calls.params("Query") if q.get("IndexName") == "tenant-index"]
    assert len(listings) == 1
    assert outcomes(first) == {job["id"]: "ok" for job in data}
    assert first.json["next_cursor"] is None
    assert {item["state"] for item in first.json["items"]} == {"PAUSED"}
    assert outcomes(bulk(api, "pause", {"tags": {"team": "data"}})) == {job["id"]: "already" for job in data}

    assert api.get(f"/v1/jobs/{other['id']}").json["state"] == "ACTIVE"
    assert api.get(f"/v1/jobs/{theirs['id']}", identity=GLOBEX).json["state"] == "ACTIVE"  # never another tenant's
    for job in data:
        records = api.get("/v1/audit", query={"resource": job["id"], "action": "job.pause"}).json["items"]
        assert [r["actor"]["display"] for r in records] == ["tickwork-tenant-acme/alice"]  # once, though asked twice


def test_by_ids_each_answered_not_found_for_unknown_and_another_tenant_s_refused_with_its_reason(api, pipeline):
    mine = api.create(name="mine")
    cancelled = api.create(name="gone")
    assert api.delete(f"/v1/jobs/{cancelled['id']}").status in (200, 202, 204)
    theirs = api.create(identity=GLOBEX, name="theirs")
    unknown = "j" + "0" * 25

    reply = bulk(api, "resume", {"job_ids": [mine["id"], cancelled["id"], theirs["id"], unknown]})
    assert outcomes(reply) == {
        mine["id"]: "already",
        cancelled["id"]: "refused",
        theirs["id"]: "not_found",
        unknown: "not_found",
    }
    refused = next(item for item in reply.json["items"] if item["outcome"] == "refused")
    assert "CANCELLED" in refused["reason"]
    assert api.get(f"/v1/jobs/{theirs['id']}", identity=GLOBEX).json["state"] == "ACTIVE"

    assert outcomes(bulk(api, "cancel", {"job_ids": [mine["id"]]})) == {mine["id"]: "ok"}
    assert outcomes(bulk(api, "cancel", {"job_ids": [mine["id"]]})) == {mine["id"]: "already"}


def test_a_selection_past_the_cap_is_answered_a_page_at_a_time_with_a_cursor(api, pipeline, monkeypatch):
    from tickwork.control import bulk_jobs

    monkeypatch.setattr(bulk_jobs, "MAX_BULK_JOBS", 2)
    jobs = [api.create(name=f"n{i}", tags={"team": "night"}) for i in range(3)]
    first = bulk(api, "pause", {"tags": {"team": "night"}})
    assert len(outcomes(first)) == 2
    assert first.json["next_cursor"]
    rest = api.post(
        "/v1/bulk/jobs",
        {"action": "pause", "selector": {"tags": {"team": "night"}}, "cursor": first.json["next_cursor"]},
    )
    assert set(outcomes(first)) | set(outcomes(rest)) == {job["id"] for job in jobs}
    assert rest.json["next_cursor"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "explode", "selector": {"tags": {"team": "a"}}}, "action"),
        ({"action": "pause", "selector": {}}, "selector"),
        ({"action": "pause", "selector": {"tags": {"team": "a"}, "job_ids": ["j1"]}}, "selector"),
        ({"action": "pause", "selector": {"job_ids": ["j" + "0" * 25] * 101}}, "selector.job_ids"),
        ({"action": "pause", "selector": {"job_ids": ["j" + "0" * 25]}, "cursor": "x"}, "cursor"),
        ({"action": "pause"}, "selector"),
    ],
)
def test_bad_input_is_422_naming_the_field_and_changes_nothing(api, pipeline, body, field):
    job = api.create(name="a", tags={"team": "a"})
    reply = api.post("/v1/bulk/jobs", body)
    assert reply.status == 422, reply.text
    assert reply.fields[0].startswith(field), reply.fields
    assert api.get(f"/v1/jobs/{job['id']}").json["state"] == "ACTIVE"


def test_a_bodiless_bulk_request_is_refused(api, pipeline):
    assert api.post("/v1/bulk/jobs", identity=ACME).status == 422
