"""RegionMode strong (docs/regions.md section 2: audited changes as an intent, the change marked, then a confirm)
against the features that were built on transactions: what a change in flight (its item marked, its record not yet
confirmed) does to another request on the same item."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.audit_settlement import SETTLES_AFTER
from tickwork.model.clock import iso

from tests.api.conftest import ApiClient
from tests.api.test_audit_trail import ADMIN, FAILING, audit_items, table_items
from tests.api.test_audit_trail_strong import dying_before_update
from tests.faults.crashes import ProcessKilled
from tests.harness import Pipeline
from tests.integration.test_audited_writes_without_transactions import dying_before_write
from tests.integration.test_expiry_sweep import STRONG

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def pipeline(mocked_aws: None) -> Iterator[Any]:
    with Pipeline.create(parameters=STRONG) as p:  # the template's strong table: its expiry index, no TTL
        assert p.services.settings.region_mode == "strong"
        yield p


@contextmanager
def during_the_next_confirm(pipeline: Any, call: Callable[[], Any]) -> Iterator[list[Any]]:
    """`call` made once, as the next audited write is about to confirm its record (its change made and marked): a
    request racing it on the same item. Yields what `call` returned, once it has."""
    client = pipeline.services.store.shared_table.client
    made: list[Any] = []
    started: list[bool] = []

    def before_confirm(params: dict[str, Any], **_: Any) -> None:
        if params.get("UpdateExpression", "").startswith("REMOVE pending") and not started:
            started.append(True)
            made.append(call())

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", before_confirm)
    try:
        yield made
    finally:
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", before_confirm)


def test_a_trigger_racing_another_triggers_join_joins_the_same_window(api: ApiClient, pipeline: Any) -> None:
    job = api.create(schedule={"cron": "0 0 1 1 *"})
    debounce = {"key": "k", "seconds": 60, "collect": True}
    path = f"/v1/jobs/{job['id']}/trigger"
    first = api.post(path, {"debounce": debounce, "payload": {"n": 1}})
    assert first.status == 202, first.text
    racing = lambda: api.post(path, {"debounce": debounce, "payload": {"n": 3}})  # noqa: E731
    with during_the_next_confirm(pipeline, racing) as inner:
        second = api.post(path, {"debounce": debounce, "payload": {"n": 2}})
    assert second.status == 202, second.text
    assert inner[0].status == 409, inner[0].text  # the run held by a join not yet confirmed: try again
    runs = pipeline.runs_of(job["id"])
    assert [r.id for r in runs] == [first.json["id"]]  # one run for the window
    carried = runs[0].payload["payloads"]
    assert {"n": 2} in carried
    assert {"n": 3} not in carried


JOB_BODY = {"name": "keyed", "type": "echo", "schedule": {"rate": "1 hour"}}


def create_with_key(api: ApiClient, key: str) -> Any:
    return api.post("/v1/jobs", JOB_BODY, headers={"Idempotency-Key": key})


def writes_of_a_keyed_create(api: ApiClient, pipeline: Any) -> list[str]:
    """The writes a keyed create sends (its tenant known already)."""
    assert create_with_key(api, "first").status == 201
    with dying_before_write(pipeline, 10**6) as sent:
        assert create_with_key(api, "counting").status == 201
    return sent


def test_an_idempotent_create_dying_anywhere_then_retried_makes_one_job_one_record_and_counts_it(
    api: ApiClient, pipeline: Any
) -> None:
    settings = api.request("PUT", "/v1/tenants/acme", body={"max_active_jobs": 100}, identity=ADMIN)
    assert settings.status == 200, settings.text
    writes = len(writes_of_a_keyed_create(api, pipeline))
    for nth in range(1, writes + 1):
        key = f"dies-before-{nth}"
        with dying_before_write(pipeline, nth), pytest.raises(ProcessKilled):
            create_with_key(api, key)
        retried = create_with_key(api, key)
        assert retried.status in (200, 201), (nth, retried.text)
        again = create_with_key(api, key)
        assert again.json == retried.json, nth
    pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
    pipeline.tick()
    jobs = [i for i in table_items(pipeline).values() if i.get("kind", {}).get("S") == "JOB"]
    assert len(jobs) == writes + 2  # one a key, and the first two creates'
    created = [r["resource"]["id"] for r in audit_items(pipeline) if r["action"] == "job.create"]
    assert sorted(created) == sorted(j["pk"]["S"].removeprefix("JOB#") for j in jobs)  # one record each
    items = table_items(pipeline)
    for marked in [i for i in items.values() if "audit_pending" in i]:  # left by a death before its clear
        pk, sk = marked["audit_pending"]["S"].rsplit("|", 1)
        assert items[(pk, sk)]["kind"] == {"S": "AUDIT"}, "a mark whose record is not confirmed"
    usage = pipeline.services.tenant_records.get_settings_and_usage("acme")[1]
    assert len(jobs) <= int(usage["active_jobs"]) <= len(jobs) + writes  # never too low


def test_a_backfill_of_a_job_held_by_a_change_not_yet_confirmed_creates_no_run_without_its_record(
    api: ApiClient, pipeline: Any
) -> None:
    job = api.create(schedule={"cron": "0 * * * *"})
    with dying_before_update(pipeline, "REMOVE pending"):  # before its record's confirm
        api.patch(f"/v1/jobs/{job['id']}", {"name": "renamed"})  # changed, its record young for SETTLES_AFTER
    now = pipeline.clock.now()
    body = {"from": iso(now - timedelta(hours=3)), "to": iso(now), "max_runs": 10}
    reply = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert reply.status == 409, reply.text  # as a conflicting write: nothing queued that no record covers
    assert not pipeline.runs_of(job["id"])
    pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
    pipeline.tick()  # the dead request's record settled: its change happened
    again = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert again.status == 200, again.text
    runs = [r for r in pipeline.runs_of(job["id"]) if r.trigger.value == "backfill"]
    actions = [r["action"] for r in audit_items(pipeline) if r["resource"]["id"] == job["id"]]
    assert len(runs) == again.json["created"] > 0
    assert sorted(actions) == ["job.backfill", "job.create", "job.update"]


def test_a_second_backfill_of_a_skipped_runs_occurrence_leaves_its_ordering_entry_skipped_and_its_record(
    api: ApiClient, pipeline: Any
) -> None:
    job = api.create(**{**FAILING, "schedule": {"cron": "0 * * * *"}, "ordering": {"key": "ledger"}})
    now = pipeline.clock.now()
    body = {"from": iso(now - timedelta(hours=1)), "to": iso(now), "max_runs": 1}
    (run_id,) = api.post(f"/v1/jobs/{job['id']}/backfill", body).json["runs"]
    pipeline.drain()
    assert api.get(f"/v1/runs/{run_id}").json["status"] == "FAILED"
    with dying_before_update(pipeline, "REMOVE pending"):  # the skip made and marked, its record not confirmed
        api.post(f"/v1/runs/{run_id}/skip")
    again = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert again.status in (200, 409), again.text
    pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
    pipeline.tick()
    (entry,) = [i for (_, sk), i in table_items(pipeline).items() if sk.startswith("ORDER#") and "#Q#" in sk]
    assert entry.get("skipped") == {"BOOL": True}
    assert [r["action"] for r in audit_items(pipeline) if r["resource"]["id"] == run_id] == ["run.skip"]
