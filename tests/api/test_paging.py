"""Listings: newest first, filters, `limit`, and `next_cursor` paging to the end (Query only, never Scan)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _all_pages(api, path, **query):
    pages, cursor = [], None
    while True:
        params = dict(query)
        if cursor:
            params["cursor"] = cursor
        reply = api.get(path, query=params)
        assert reply.status == 200, reply.text
        pages.append([item["id"] for item in reply.json["items"]])
        cursor = reply.json["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 50, "paging never ended"


def _flat(pages):
    return [item for page in pages for item in page]


def _make_jobs(api, pipeline, count, **spec):
    ids = []
    for index in range(count):
        ids.append(api.create(name=f"job-{index:02d}", **spec)["id"])
        pipeline.clock.advance(0.001)
    return ids


def test_jobs_page_newest_first_to_the_end(api, pipeline):
    ids = _make_jobs(api, pipeline, 7)
    pipeline.calls.clear()
    pages = _all_pages(api, "/v1/jobs", limit=3)
    assert pages == [ids[::-1][0:3], ids[::-1][3:6], ids[::-1][6:]]
    assert pipeline.calls.count("Scan") == 0
    assert all(p["IndexName"] == "tenant-index" for p in pipeline.calls.params("Query"))


def test_an_exact_multiple_ends_without_an_empty_page(api, pipeline):
    ids = _make_jobs(api, pipeline, 4)
    pages = _all_pages(api, "/v1/jobs", limit=2)
    assert pages == [ids[::-1][0:2], ids[::-1][2:4]]


def test_default_limit_is_50_and_max_is_100(api, pipeline):
    _make_jobs(api, pipeline, 3)
    reply = api.get("/v1/jobs")
    assert len(reply.json["items"]) == 3
    assert reply.json["next_cursor"] is None
    assert api.get("/v1/jobs", query={"limit": 100}).status == 200
    assert api.get("/v1/jobs", query={"limit": 101}).status == 422
    limits = {p["Limit"] for p in pipeline.calls.params("Query") if p.get("IndexName") == "tenant-index"}
    assert 51 in limits  # limit + 1: one read tells whether there is a next page


def test_filters_state_type_and_name_prefix_page_too(api, pipeline):
    nightly = _make_jobs(api, pipeline, 5, schedule={"rate": "1 hour"})  # names job-00 .. job-04
    for job_id in nightly:
        api.patch(f"/v1/jobs/{job_id}", {"name": f"nightly-{job_id}"})
    hourly = _make_jobs(api, pipeline, 1)[0]
    hook = api.create(name="nightly-hook", type="http", payload={"url": "https://example.com/h"})["id"]
    api.post(f"/v1/jobs/{nightly[1]}/pause")
    api.delete(f"/v1/jobs/{nightly[3]}")

    assert _flat(_all_pages(api, "/v1/jobs", limit=2, name_prefix="nightly-")) == [hook, *nightly[::-1]]
    assert _flat(_all_pages(api, "/v1/jobs", limit=2, type="http")) == [hook]
    assert _flat(_all_pages(api, "/v1/jobs", limit=1, state="PAUSED")) == [nightly[1]]
    assert _flat(_all_pages(api, "/v1/jobs", limit=2, state="CANCELLED")) == [nightly[3]]
    active_echo = _flat(_all_pages(api, "/v1/jobs", limit=2, state="ACTIVE", type="echo"))
    assert active_echo == [hourly, nightly[4], nightly[2], nightly[0]]


def test_runs_of_a_job_page_newest_first(api, pipeline):
    job = api.create()
    runs = []
    for _ in range(5):
        runs.append(api.post(f"/v1/jobs/{job['id']}/trigger").json["id"])
        pipeline.clock.advance(1)
    pages = _all_pages(api, f"/v1/jobs/{job['id']}/runs", limit=2)
    assert pages == [runs[::-1][0:2], runs[::-1][2:4], runs[::-1][4:]]


def test_the_dlq_pages_newest_failure_first(api, pipeline):
    job = api.create(payload={"fail_attempts": 9}, retry={"max_attempts": 1})
    failed = []
    for _ in range(3):
        failed.append(api.post(f"/v1/jobs/{job['id']}/trigger").json["id"])
        pipeline.drain()
        pipeline.clock.advance(1)
    pages = _all_pages(api, "/v1/dlq", limit=2)
    assert pages == [failed[::-1][0:2], failed[::-1][2:]]


def test_cursors_are_opaque(api, pipeline):
    _make_jobs(api, pipeline, 3)
    cursor = api.get("/v1/jobs", query={"limit": 1}).json["next_cursor"]
    assert "acme" not in cursor
    assert "JOB#" not in cursor
    assert "T#" not in cursor


def test_a_selective_filter_reads_a_bounded_amount_per_request_and_still_pages_to_the_end(api, pipeline, monkeypatch):
    from tickwork.store import listings

    monkeypatch.setattr(listings, "MAX_QUERY_PAGES", 2)
    monkeypatch.setattr(listings, "_FILTERED_PAGE", 2)
    ids = _make_jobs(api, pipeline, 9)
    wanted = {ids[0], ids[4]}
    for job_id in wanted:
        api.patch(f"/v1/jobs/{job_id}", {"name": "needle"})
    pipeline.calls.clear()
    pages = _all_pages(api, "/v1/jobs", limit=1, name_prefix="needle")
    assert _flat(pages) == [ids[4], ids[0]]
    assert len(pages) > 1  # the budget cut pages short, each with a cursor to resume from
    queries = pipeline.calls.params("Query")
    assert len(queries) <= 2 * len(pages)
    assert all(q["Limit"] == 2 for q in queries)
    assert [] in pages  # a page may come back empty, with a cursor, rather than reading without bound
