"""Admin views (docs/api.md "Tenants and access"): an admin reads another tenant's jobs, runs, workflows, calendars
and freezes, by `?tenant=` on the listings and by id on the reads; a tenant that names another is refused (403,
naming `tenant`, nothing read), and a tenant's own listings are as they were."""

from __future__ import annotations

from typing import Any

import pytest
from tickwork.control.api_examples import CALENDAR, FREEZE, WORKFLOW_SPEC

from tests.api.conftest import ACME, GLOBEX, ApiClient
from tests.api.test_tenant_admin_routes import ADMIN

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

# The listings that take `tenant`, each with the `tenant` its items name.
LISTINGS = ["/v1/jobs", "/v1/workflows", "/v1/calendars", "/v1/freezes", "/v1/dlq", "/v1/runs/stuck"]


def _acme_estate(api: ApiClient, pipeline: Any) -> dict[str, Any]:
    """One of each of acme's: a job with a FAILED run, a workflow with a run, a calendar and a freeze."""
    job = api.create(payload={"fail_attempts": 9}, retry={"max_attempts": 1})
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    workflow = api.post("/v1/workflows", WORKFLOW_SPEC["nightly-etl"][1]).json
    workflow_run = api.post(f"/v1/workflows/{workflow['id']}/trigger").json
    calendar = api.post("/v1/calendars", CALENDAR["holidays"][1]).json
    freeze = api.post("/v1/freezes", FREEZE["deploy"][1]).json
    pipeline.drain()
    return {
        "job": job,
        "run": run,
        "workflow": workflow,
        "workflow_run": workflow_run,
        "calendar": calendar,
        "freeze": freeze,
    }


def _ids(reply: Any) -> list[str]:
    assert reply.status == 200, reply.text
    return [item["id"] for item in reply.json["items"]]


def test_an_admin_lists_another_tenants_jobs_runs_workflows_calendars_and_freezes(api, pipeline):
    acme = _acme_estate(api, pipeline)
    api.create(identity=GLOBEX, name="globex's")
    acme_query = {"tenant": "acme"}

    assert _ids(api.get("/v1/jobs", identity=ADMIN, query=acme_query)) == [acme["job"]["id"]]
    assert _ids(api.get("/v1/workflows", identity=ADMIN, query=acme_query)) == [acme["workflow"]["id"]]
    assert _ids(api.get("/v1/calendars", identity=ADMIN, query=acme_query)) == [acme["calendar"]["id"]]
    assert _ids(api.get("/v1/freezes", identity=ADMIN, query=acme_query)) == [acme["freeze"]["id"]]
    assert _ids(api.get("/v1/dlq", identity=ADMIN, query=acme_query)) == [acme["run"]["id"]]
    assert _ids(api.get(f"/v1/jobs/{acme['job']['id']}/runs", identity=ADMIN)) == [acme["run"]["id"]]
    assert _ids(api.get(f"/v1/workflows/{acme['workflow']['id']}/runs", identity=ADMIN)) == [acme["workflow_run"]["id"]]
    # Each item names its tenant.
    for path in LISTINGS[:4]:
        assert {i["tenant"] for i in api.get(path, identity=ADMIN, query=acme_query).json["items"]} == {"acme"}
    # The admin's own listing (no `tenant`) is still its own tenant's.
    assert _ids(api.get("/v1/jobs", identity=ADMIN)) == []


def test_an_admin_reads_another_tenants_items_by_id(api, pipeline):
    acme = _acme_estate(api, pipeline)
    reads = {
        f"/v1/jobs/{acme['job']['id']}": acme["job"]["id"],
        f"/v1/runs/{acme['run']['id']}": acme["run"]["id"],
        f"/v1/workflows/{acme['workflow']['id']}": acme["workflow"]["id"],
        f"/v1/workflow-runs/{acme['workflow_run']['id']}": acme["workflow_run"]["id"],
        f"/v1/freezes/{acme['freeze']['id']}": acme["freeze"]["id"],
    }
    for path, item_id in reads.items():
        reply = api.get(path, identity=ADMIN)
        assert reply.status == 200, (path, reply.text)
        assert reply.json["id"] == item_id
    assert api.get(f"/v1/runs/{acme['run']['id']}/logs", identity=ADMIN).status == 200
    # A calendar is kept in its tenant's partition: an admin names the tenant.
    calendar = f"/v1/calendars/{acme['calendar']['id']}"
    assert api.get(calendar, identity=ADMIN).status == 404
    assert api.get(calendar, identity=ADMIN, query={"tenant": "acme"}).json["id"] == acme["calendar"]["id"]


def test_an_admins_read_changes_nothing_and_its_changes_stay_its_own_tenants(api, pipeline):
    acme = _acme_estate(api, pipeline)
    job = f"/v1/jobs/{acme['job']['id']}"
    assert api.post(f"{job}/pause", identity=ADMIN).status == 404
    assert api.get(job).json["state"] == acme["job"]["state"]


@pytest.mark.parametrize("path", LISTINGS)
def test_a_tenant_that_names_another_tenant_is_refused_naming_the_parameter_and_reads_nothing(api, pipeline, path):
    _acme_estate(api, pipeline)
    pipeline.calls.clear()
    refused = api.get(path, identity=GLOBEX, query={"tenant": "acme"})
    assert refused.status == 403, refused.text
    assert "`tenant`" in refused.json["detail"]
    assert "acme" not in refused.text.replace("tenant=acme", "")
    for read in ("Query", "GetItem", "BatchGetItem", "Scan"):
        assert pipeline.calls.count(read) == 0, read


def test_a_tenant_that_names_another_tenant_cannot_read_its_calendar_either(api, pipeline):
    acme = _acme_estate(api, pipeline)
    refused = api.get(f"/v1/calendars/{acme['calendar']['id']}", identity=GLOBEX, query={"tenant": "acme"})
    assert refused.status == 403
    assert "`tenant`" in refused.json["detail"]


@pytest.mark.parametrize("path", LISTINGS)
def test_a_tenants_own_listing_is_the_same_with_its_own_name_or_none(api, pipeline, path):
    _acme_estate(api, pipeline)
    mine = api.get(path, identity=ACME)
    assert mine.status == 200
    assert api.get(path, identity=ACME, query={"tenant": "acme"}).json == mine.json
    if path != "/v1/runs/stuck":
        assert mine.json["items"]


NOT_TENANTS = ["not a tenant!", "acme*", "**", "", "a" * 129, "acme#JOB"]


@pytest.mark.parametrize("path", [*LISTINGS, "/v1/runs", "/v1/audit", "/v1/jobs/j01jd2k3m4n5p6q7r8s9t0v1w2"])
@pytest.mark.parametrize("name", NOT_TENANTS, ids=lambda name: repr(name[:12]))
def test_a_tenant_name_that_is_not_one_is_refused_naming_the_parameter(api, pipeline, path, name):
    reply = api.get(path, identity=ADMIN, query={"tenant": name})
    assert reply.status == 422, reply.text
    assert [e["field"] for e in reply.json["errors"]] == ["tenant"]


def test_an_admins_pages_of_another_tenants_jobs_carry_on_with_their_cursor(api, pipeline):
    made = [api.create(name=f"job {n}")["id"] for n in range(3)]
    seen: list[str] = []
    cursor = None
    for _ in range(3):
        query = {"tenant": "acme", "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/jobs", identity=ADMIN, query=query).json
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(made)  # each once (made in one millisecond of the fake clock: in any order)
    # A cursor is bound to the tenant whose partition it reads: it carries on nowhere else.
    first = api.get("/v1/jobs", identity=ADMIN, query={"tenant": "acme", "limit": 1}).json["next_cursor"]
    assert api.get("/v1/jobs", identity=ADMIN, query={"tenant": "globex", "cursor": first}).status == 422


def test_the_openapi_document_shows_the_tenant_parameter_on_each_listing(api):
    document = api.get("/v1/openapi.json").json
    for path in [*LISTINGS, "/v1/calendars/{calendar_id}"]:
        parameters = document["paths"][path]["get"].get("parameters", [])
        assert "tenant" in [p["name"] for p in parameters if p["in"] == "query"], path


# Every tenant's (`tenant=*`): each known tenant's partition read at once and merged, never a Scan.
EVERY = {"tenant": "*"}
EVERY_LISTINGS = [*LISTINGS, "/v1/runs"]


def _globex_estate(api: ApiClient, pipeline: Any) -> dict[str, Any]:
    job = api.create(identity=GLOBEX, name="globex's", payload={"fail_attempts": 9}, retry={"max_attempts": 1})
    run = api.post(f"/v1/jobs/{job['id']}/trigger", identity=GLOBEX).json
    workflow = api.post("/v1/workflows", WORKFLOW_SPEC["nightly-etl"][1], identity=GLOBEX).json
    calendar = api.post("/v1/calendars", CALENDAR["holidays"][1], identity=GLOBEX).json
    freeze = api.post("/v1/freezes", FREEZE["deploy"][1], identity=GLOBEX).json
    pipeline.drain()
    return {"job": job, "run": run, "workflow": workflow, "calendar": calendar, "freeze": freeze}


def test_an_admin_lists_every_tenants_items_each_naming_its_tenant(api, pipeline):
    acme, globex = _acme_estate(api, pipeline), _globex_estate(api, pipeline)
    expected = {
        "/v1/jobs": {acme["job"]["id"]: "acme", globex["job"]["id"]: "globex"},
        "/v1/workflows": {acme["workflow"]["id"]: "acme", globex["workflow"]["id"]: "globex"},
        "/v1/calendars": {acme["calendar"]["id"]: "acme", globex["calendar"]["id"]: "globex"},
        "/v1/freezes": {acme["freeze"]["id"]: "acme", globex["freeze"]["id"]: "globex"},
        "/v1/dlq": {acme["run"]["id"]: "acme", globex["run"]["id"]: "globex"},
    }
    for path, items in expected.items():
        reply = api.get(path, identity=ADMIN, query=EVERY)
        assert reply.status == 200, (path, reply.text)
        assert {i["id"]: i["tenant"] for i in reply.json["items"]} == items, path
    runs = api.get("/v1/runs", identity=ADMIN, query=EVERY).json["items"]
    assert {acme["run"]["id"], globex["run"]["id"]} <= {r["id"] for r in runs}
    assert {r["tenant"] for r in runs} == {"acme", "globex"}
    assert api.get("/v1/runs/stuck", identity=ADMIN, query=EVERY).status == 200
    # A calendar by id, whichever tenant's it is.
    calendar = api.get(f"/v1/calendars/{globex['calendar']['id']}", identity=ADMIN, query=EVERY)
    assert calendar.json["tenant"] == "globex"


def test_every_tenants_jobs_come_newest_first_across_tenants_page_by_page_each_once(api, pipeline):
    made: list[str] = []
    for n in range(7):
        made.append(api.create(identity=(ACME, GLOBEX)[n % 3 == 0], name=f"job {n}")["id"])
        pipeline.clock.advance(1)
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        page = api.get(
            "/v1/jobs", identity=ADMIN, query={**EVERY, "limit": 3, **({"cursor": cursor} if cursor else {})}
        )
        assert page.status == 200, page.text
        assert len(page.json["items"]) <= 3
        seen += [item["id"] for item in page.json["items"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break
    assert seen == made[::-1]
    # A cursor of every tenant's listing carries on there only: not on one tenant's, nor another listing.
    first = api.get("/v1/jobs", identity=ADMIN, query={**EVERY, "limit": 1}).json["next_cursor"]
    assert api.get("/v1/jobs", identity=ADMIN, query={"tenant": "acme", "cursor": first}).status == 422
    assert api.get("/v1/workflows", identity=ADMIN, query={**EVERY, "cursor": first}).status == 422


def test_a_filtered_listing_of_every_tenants_jobs_keeps_only_the_matches(api, pipeline):
    paused = api.create(identity=GLOBEX, name="paused one")
    api.post(f"/v1/jobs/{paused['id']}/pause", identity=GLOBEX)
    api.create(name="active one")
    reply = api.get("/v1/jobs", identity=ADMIN, query={**EVERY, "state": "PAUSED"})
    assert [j["id"] for j in reply.json["items"]] == [paused["id"]]


def test_every_tenants_listing_reads_each_known_tenants_partition_once_and_never_scans(api, pipeline):
    _acme_estate(api, pipeline)
    api.create(identity=GLOBEX)
    pipeline.calls.clear()
    assert api.get("/v1/jobs", identity=ADMIN, query=EVERY).status == 200
    # The known tenants' Query, then one of each tenant's partition of tenant-index.
    assert pipeline.calls.count("Query") == 3
    assert pipeline.calls.count("Scan") == 0


def test_a_tenant_is_made_known_once_by_its_first_create(api, pipeline):
    pipeline.calls.clear()
    api.create()
    api.create()
    api.post("/v1/calendars", CALENDAR["holidays"][1])
    known = [p for p in pipeline.calls.params("PutItem") if p["Item"]["pk"]["S"] == "TENANTS"]
    assert [p["Item"]["sk"]["S"] for p in known] == ["acme"]


def test_past_the_tenants_it_reads_at_once_every_tenants_listing_is_refused_naming_tenant(api, pipeline, monkeypatch):
    from tickwork.store import tenants

    monkeypatch.setattr(tenants, "MAX_EVERY_TENANT", 1)
    api.create()
    api.create(identity=GLOBEX)
    reply = api.get("/v1/jobs", identity=ADMIN, query=EVERY)
    assert reply.status == 422
    assert reply.fields == ["tenant"]
    assert "name one" in reply.text


@pytest.mark.parametrize("path", [*EVERY_LISTINGS, "/v1/audit"])
def test_a_tenant_that_asks_for_every_tenants_is_refused_and_reads_nothing(api, pipeline, path):
    _acme_estate(api, pipeline)
    pipeline.calls.clear()
    refused = api.get(path, identity=GLOBEX, query=EVERY)
    assert refused.status == 403, refused.text
    assert "tenant" in refused.json["detail"]
    for read in ("Query", "GetItem", "BatchGetItem", "Scan"):
        assert pipeline.calls.count(read) == 0, read


def test_a_read_by_id_with_tenant_finds_only_that_tenants_item(api, pipeline):
    acme = _acme_estate(api, pipeline)
    reads = [
        f"/v1/jobs/{acme['job']['id']}",
        f"/v1/runs/{acme['run']['id']}",
        f"/v1/workflows/{acme['workflow']['id']}",
        f"/v1/workflow-runs/{acme['workflow_run']['id']}",
        f"/v1/freezes/{acme['freeze']['id']}",
    ]
    for path in reads:
        assert api.get(path, identity=ADMIN, query={"tenant": "acme"}).status == 200, path
        assert api.get(path, identity=ADMIN, query=EVERY).status == 200, path
        assert api.get(path, identity=ADMIN, query={"tenant": "globex"}).status == 404, path
        assert api.get(path, identity=ACME, query={"tenant": "acme"}).status == 200, path
        refused = api.get(path, identity=GLOBEX, query={"tenant": "acme"})
        assert refused.status == 403, path
        assert "`tenant`" in refused.json["detail"]


def test_me_says_the_callers_tenant_and_whether_it_is_an_admin(api):
    assert api.get("/v1/me", identity=ACME).json == {"tenant": "acme", "admin": False}
    assert api.get("/v1/me", identity=ADMIN).json == {"tenant": "123456789012:role/tickwork-admin", "admin": True}


def test_every_tenants_metrics_are_an_admins_totals_and_a_tenants_star_is_refused(api):
    query = {"names": "retries", **EVERY}
    assert api.get("/v1/metrics", identity=ADMIN, query=query).status == 200
    refused = api.get("/v1/metrics", identity=ACME, query=query)
    assert refused.status == 403
    assert "`tenant`" in refused.json["detail"]


def test_every_tenants_run_search_filters_by_type_and_job_across_tenants(api, pipeline):
    acme, globex = _acme_estate(api, pipeline), _globex_estate(api, pipeline)
    by_type = api.get("/v1/runs", identity=ADMIN, query={**EVERY, "type": "echo"}).json["items"]
    assert {acme["run"]["id"], globex["run"]["id"]} <= {r["id"] for r in by_type}
    by_job = api.get("/v1/runs", identity=ADMIN, query={**EVERY, "job_id": globex["job"]["id"]}).json["items"]
    assert [r["id"] for r in by_job] == [globex["run"]["id"]]
    failed = api.get("/v1/runs", identity=ADMIN, query={**EVERY, "status": "FAILED", "limit": 1})
    first = failed.json["items"]
    second = api.get(
        "/v1/runs", identity=ADMIN, query={**EVERY, "status": "FAILED", "cursor": failed.json["next_cursor"]}
    )
    assert {r["id"] for r in first + second.json["items"]} == {acme["run"]["id"], globex["run"]["id"]}
