"""GET /v1/jobs?tag=key=value (the console's Jobs page filters by tag): a condition in the listing's
FilterExpression on the one tenant-index Query, paging still to the end, and a 422 naming `tag` when malformed."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _ids_of_every_page(api, **query):
    ids, cursor = [], None
    for _ in range(50):
        reply = api.get("/v1/jobs", query={**query, **({"cursor": cursor} if cursor else {})})
        assert reply.status == 200, reply.text
        ids += [item["id"] for item in reply.json["items"]]
        cursor = reply.json["next_cursor"]
        if cursor is None:
            return ids
    raise AssertionError("paging never ended")


def test_tag_filter_keeps_only_jobs_with_that_tag_value_across_pages(api, pipeline):
    made = []
    for index in range(7):
        team = "billing" if index % 2 == 0 else "search"
        made.append((api.create(name=f"job-{index}", tags={"team": team, "env": "prod"})["id"], team))
        pipeline.clock.advance(0.001)
    api.create(name="untagged")
    billing = [job_id for job_id, team in reversed(made) if team == "billing"]

    pipeline.calls.clear()
    assert _ids_of_every_page(api, tag="team=billing", limit=2) == billing
    assert pipeline.calls.count("Scan") == 0
    queries = pipeline.calls.params("Query")
    assert queries
    assert all(q["IndexName"] == "tenant-index" for q in queries)
    assert all("#tags.#tag_key = :tag_value" in q["FilterExpression"] for q in queries)


def test_tag_filter_combines_with_state_and_name_prefix(api, pipeline):
    wanted = api.create(name="nightly-export", tags={"team": "data"})["id"]
    api.create(name="nightly-report", tags={"team": "ops"})
    paused = api.create(name="nightly-paused", tags={"team": "data"})["id"]
    assert api.post(f"/v1/jobs/{paused}/pause").status == 200

    assert _ids_of_every_page(api, tag="team=data", name_prefix="nightly", state="ACTIVE") == [wanted]
    assert _ids_of_every_page(api, tag="team=data", state="PAUSED") == [paused]


def test_tag_key_with_dots_and_value_with_equals_signs(api):
    dotted = api.create(tags={"app.kubernetes.io/name": "a=b"})["id"]
    api.create(tags={"app": "a=b"})

    assert _ids_of_every_page(api, tag="app.kubernetes.io/name=a=b") == [dotted]
    assert _ids_of_every_page(api, tag="app.kubernetes.io/name=a") == []


def test_empty_tag_value_matches_a_tag_set_to_empty(api):
    empty = api.create(tags={"flag": ""})["id"]
    api.create(tags={"flag": "on"})

    assert _ids_of_every_page(api, tag="flag=") == [empty]


@pytest.mark.parametrize("tag", ["team", "=billing", "", "k" * 129 + "=v", "k=" + "v" * 257])
def test_malformed_tag_filter_is_422_naming_tag_and_reads_nothing(api, pipeline, tag):
    pipeline.calls.clear()
    reply = api.get("/v1/jobs", query={"tag": tag})
    assert reply.status == 422, reply.text
    assert reply.fields == ["tag"]
    assert pipeline.calls.count("Query") == 0
