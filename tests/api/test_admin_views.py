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


@pytest.mark.parametrize("name", ["not a tenant!", "*"])
def test_a_tenant_name_that_is_not_one_is_refused_naming_the_parameter(api, pipeline, name):
    # `*` (every tenant's) is the audit listing's only: the jobs' index has one partition per tenant.
    reply = api.get("/v1/jobs", identity=ADMIN, query={"tenant": name})
    assert reply.status == 422
    assert "tenant" in reply.text


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
