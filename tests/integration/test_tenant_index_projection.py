"""tenant-index projects only what its queries filter on (issue 16, item 4): a claim's job update leaves the job's
index entry alone (one WRU a run), and a listing still returns whole jobs, with one BatchGetItem a page."""

from __future__ import annotations

from datetime import timedelta

from tickwork.store import TENANT_INDEX, TENANT_INDEX_PROJECTION

from tests.harness import TENANT

FAR = timedelta(seconds=300)


def _index_entry(pipeline, job_id: str) -> dict:
    items = pipeline.services.clients.client("dynamodb").query(
        TableName=pipeline.resources.table_name,
        IndexName=TENANT_INDEX,
        KeyConditionExpression="tenant_key = :k",
        ExpressionAttributeValues={":k": {"S": f"T#{TENANT}#JOB"}},
    )["Items"]
    (entry,) = [i for i in items if i["job_id"]["S"] == job_id]
    return entry


def test_the_index_entry_holds_only_the_projected_attributes_and_a_claim_leaves_it_alone(pipeline):
    job = pipeline.create_job(schedule={"rate": "1 minute"}, payload={"secret-ish": "x"}, tags={"team": "data"})
    before = _index_entry(pipeline, job.id)
    keys = {"pk", "sk", "tenant_key", "tenant_sort"}
    assert set(before) <= keys | set(TENANT_INDEX_PROJECTION)
    assert "payload_json" not in before
    assert "next_run_at" not in before  # every claim changes it: not projected
    assert "version" not in before
    pipeline.clock.advance(FAR.total_seconds())
    assert pipeline.tick()["dispatched"] >= 1
    assert pipeline.services.store.jobs.get_job(job.id).version > job.version  # type: ignore[union-attr]
    assert _index_entry(pipeline, job.id) == before  # the claim's UpdateItem did not touch what the index holds


def test_a_listing_returns_whole_jobs_with_one_query_and_one_batch_get_a_page(pipeline):
    jobs = []
    for i in range(5):
        pipeline.clock.advance(1)  # newest first is by creation time
        jobs.append(
            pipeline.create_job(
                schedule={"rate": "1 minute"}, payload={"n": i}, tags={"team": "data" if i % 2 else "ops"}
            )
        )
    pipeline.calls.clear()
    page = pipeline.services.queries.list_jobs(TENANT, limit=3, tag=("team", "data"))
    assert [j.id for j in page.items] == [jobs[3].id, jobs[1].id]  # newest first, filtered on the projected tags
    assert [j.payload for j in page.items] == [{"n": 3}, {"n": 1}]  # whole jobs: payload and all
    assert all(j.next_run_at is not None for j in page.items)
    calls = pipeline.calls.by_operation()
    assert (calls["Query"], calls["BatchGetItem"]) == (1, 1)
