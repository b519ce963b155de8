"""GET /v1/runs: a tenant's runs across its jobs and workflows, filtered, newest first, through the runs index.

Every search is checked against what the tenant's runs really are (each job's runs, read by job): the same runs,
in the same order, none twice, none missing, however the pages fall across the index's shards."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, StrictBool
from tickwork.control.run_searches import RunSearchFilters
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.clock import iso
from tickwork.model.errors import InvalidInput
from tickwork.store import run_search

from tests.api.conftest import GLOBEX, role_identity
from tests.harness import START

ADMIN = role_identity("tickwork-admin", session="ops")
ACME_TENANT = "acme"


class MaybeFails(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fail: StrictBool = False


if "search-maybe-fails" not in registry:

    @job_type("search-maybe-fails", MaybeFails)
    def maybe_fails(payload: MaybeFails, ctx: RunContext) -> dict[str, Any]:
        if payload.fail:
            raise LookupError("asked to fail")
        return {"ok": True}


def _search(api: Any, identity: dict[str, Any] | None = None, **query: Any) -> list[dict[str, Any]]:
    """Every page of a search, followed through its cursors."""
    found: list[dict[str, Any]] = []
    query = {"limit": 3, **query}
    while True:
        reply = api.get("/v1/runs", query=query, **({"identity": identity} if identity else {}))
        assert reply.status == 200, reply.text
        found += reply.json["items"]
        if not reply.json["next_cursor"]:
            return found
        query["cursor"] = reply.json["next_cursor"]


def _newest_first(runs: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in sorted(runs, key=lambda r: (r["scheduled_for"], r["id"]), reverse=True)]


def _failed(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in runs if r["status"] == "FAILED"]


@pytest.fixture
def fleet(api: Any) -> dict[str, Any]:
    """Five acme jobs (two tagged team=pay, one failing every run, one of another type), each triggered twice and
    scheduled through three minutes, every run executed; and one globex job."""
    jobs = {
        "pay1": api.create(name="pay1", type="search-maybe-fails", tags={"team": "pay"}, schedule={"rate": "1 minute"}),
        "pay2": api.create(name="pay2", type="search-maybe-fails", tags={"team": "pay"}, schedule={"rate": "1 minute"}),
        "broken": api.create(
            name="broken",
            type="search-maybe-fails",
            payload={"fail": True},
            retry={"max_attempts": 1},
            schedule={"rate": "1 minute"},
        ),
        "echo": api.create(name="echo", type="echo", schedule={"rate": "1 minute"}),
        "quiet": api.create(name="quiet", type="search-maybe-fails", schedule={"rate": "1 hour"}),
    }
    other = api.create(identity=GLOBEX, name="theirs", type="echo", schedule={"rate": "1 minute"})
    pipeline = api.pipeline
    for job in jobs.values():
        assert api.post(f"/v1/jobs/{job['id']}/trigger").status == 202
    for _ in range(3):
        pipeline.tick()
        pipeline.drain()
        pipeline.clock.advance(60)
    pipeline.tick()
    pipeline.drain()
    runs = {
        name: api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 100}).json["items"] for name, job in jobs.items()
    }
    assert all(runs.values())
    return {"jobs": jobs, "runs": runs, "other": other}


def test_a_search_with_no_filter_finds_every_run_of_every_job_newest_first_page_by_page(api, fleet):
    every = [run for runs in fleet["runs"].values() for run in runs]
    found = _search(api)
    assert [r["id"] for r in found] == _newest_first(every)
    assert len(found) == len({r["id"] for r in found}) > 15


def test_filters_select_what_they_name(api, fleet):
    runs, jobs = fleet["runs"], fleet["jobs"]
    every = [run for job_runs in runs.values() for run in job_runs]

    failed = _search(api, status="FAILED")
    assert [r["id"] for r in failed] == _newest_first(_failed(runs["broken"]))
    assert len(failed) >= 3
    assert all(r["status"] == "FAILED" for r in failed)
    assert _search(api, error_type="LookupError") == failed
    assert _search(api, error_type="KeyError") == []

    assert [r["id"] for r in _search(api, job_id=jobs["pay1"]["id"])] == _newest_first(runs["pay1"])
    assert [r["id"] for r in _search(api, tag="team=pay")] == _newest_first(runs["pay1"] + runs["pay2"])
    assert [r["id"] for r in _search(api, type="echo")] == _newest_first(runs["echo"])
    manual = [r for r in every if r["trigger"] == "manual"]
    assert len(manual) == len(jobs)
    assert [r["id"] for r in _search(api, trigger="manual")] == _newest_first(manual)

    since, until = START + timedelta(minutes=1), START + timedelta(minutes=2)
    window = [r for r in every if iso(since) <= r["scheduled_for"] <= iso(until)]
    assert window
    assert [r["id"] for r in _search(api, **{"from": iso(since), "to": iso(until)})] == _newest_first(window)
    ended = [r for r in every if r.get("finished_at") and iso(since) <= r["finished_at"] <= iso(until)]
    assert ended
    by_end = _search(api, on="ended_at", **{"from": iso(since), "to": iso(until)})
    assert sorted(r["id"] for r in by_end) == sorted(r["id"] for r in ended)

    # Filters combine.
    assert [r["id"] for r in _search(api, tag="team=pay", status="SUCCEEDED", job_id=jobs["pay2"]["id"])] == (
        _newest_first([r for r in runs["pay2"] if r["status"] == "SUCCEEDED"])
    )


def test_a_tenant_finds_only_its_own_runs_and_an_admin_reads_the_tenant_it_names(api, fleet):
    theirs = _search(api, identity=GLOBEX)
    assert theirs
    assert {r["job_id"] for r in theirs} == {fleet["other"]["id"]}
    # Naming another tenant's job finds nothing, as an unknown id does.
    assert _search(api, identity=GLOBEX, job_id=fleet["jobs"]["pay1"]["id"]) == []
    assert api.get("/v1/runs", query={"tenant": ACME_TENANT}, identity=GLOBEX).status == 403
    admin_view = _search(api, identity=ADMIN, tenant=ACME_TENANT, status="FAILED")
    assert [r["id"] for r in admin_view] == _newest_first(_failed(fleet["runs"]["broken"]))


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"status": "DONE"}, "status"),
        ({"trigger": "NOW"}, "trigger"),
        ({"on": "started_at"}, "on"),
        ({"from": "yesterday"}, "from"),
        ({"job_id": "j1"}, "job_id"),
        ({"workflow_id": "x"}, "workflow_id"),
        ({"tag": "no-equals-sign"}, "tag"),
        ({"limit": 0}, "limit"),
        ({"cursor": "made-up"}, "cursor"),
    ],
)
def test_a_bad_search_is_refused_naming_its_field(api, query, field):
    reply = api.get("/v1/runs", query=query)
    assert reply.status == 422, reply.text
    assert field in reply.fields, reply.text


def test_filters_no_run_can_meet_together_find_nothing(api, fleet):
    job, workflow_like = fleet["jobs"]["pay1"]["id"], "w" + "0" * 25
    assert _search(api, job_id=job, workflow_id=workflow_like) == []
    assert _search(api, tag="team=pay", workflow_id=workflow_like) == []
    assert _search(api, **{"from": "2026-11-21T13:00:00Z", "to": "2026-11-21T12:00:00Z"}) == []


def test_a_cursor_from_another_listing_or_tenant_is_refused(api, fleet):
    page = api.get("/v1/runs", query={"limit": 1}).json
    assert api.get("/v1/runs", query={"cursor": page["next_cursor"]}, identity=GLOBEX).status == 422
    dlq_cursor = api.get("/v1/dlq", query={"limit": 1}).json.get("next_cursor")
    if dlq_cursor:
        assert api.get("/v1/runs", query={"cursor": dlq_cursor}).status == 422


def test_a_type_or_tag_that_selects_more_than_the_cap_of_jobs_is_refused_naming_it(pipeline):
    from benchmarks.common import seed_one_shots

    seed_one_shots(pipeline, run_search.MAX_SEARCH_JOBS + 1, START + timedelta(hours=1))
    searches = pipeline.services.run_searches
    with pytest.raises(InvalidInput) as refused:
        searches.search("default", RunSearchFilters(job_type="echo"), limit=10, cursor=None)
    assert refused.value.errors[0].field == "type"
    # With a job named, the same type is a search of that job's runs.
    job_id = pipeline.services.listings.list_jobs("default", limit=1).items[0].id
    assert (
        searches.search("default", RunSearchFilters(job_type="echo", job_id=job_id), limit=10, cursor=None).items == []
    )


def test_pages_stay_in_order_with_none_missed_when_a_selective_filter_spends_the_budget(api, fleet, monkeypatch):
    """Each index read returns at most 2 entries and a request may make 9 reads: a search for the few FAILED
    runs among many returns short pages (some empty) with cursors, and following them finds exactly the FAILED
    runs, newest first."""
    monkeypatch.setattr(run_search, "_FILTERED_PAGE", 2)
    monkeypatch.setattr(run_search, "MAX_SEARCH_QUERIES", 9)
    pages = 0
    found: list[dict[str, Any]] = []
    query: dict[str, Any] = {"limit": 1, "status": "FAILED"}
    while True:
        reply = api.get("/v1/runs", query=query).json
        pages += 1
        found += reply["items"]
        assert len(reply["items"]) <= 1
        if not reply["next_cursor"]:
            break
        query["cursor"] = reply["next_cursor"]
    assert [r["id"] for r in found] == _newest_first(_failed(fleet["runs"]["broken"]))
    assert pages > len(found)  # some pages came back short


def test_a_search_reads_each_shard_once_and_the_page_with_one_batch_get(api, fleet):
    pipeline = api.pipeline
    pipeline.calls.clear()
    assert api.get("/v1/runs", query={"limit": 5}).status == 200
    calls = pipeline.calls.by_operation()
    index_queries = [p for p in pipeline.calls.params("Query") if p.get("IndexName") == "runs-index"]
    assert len(index_queries) == run_search.RUN_SEARCH_SHARDS
    assert calls["BatchGetItem"] == 1
    assert "Scan" not in calls
    # One job's runs: that job's shard only.
    pipeline.calls.clear()
    assert api.get("/v1/runs", query={"job_id": fleet["jobs"]["pay1"]["id"]}).status == 200
    assert len([p for p in pipeline.calls.params("Query") if p.get("IndexName") == "runs-index"]) == 1
