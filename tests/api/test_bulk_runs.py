"""POST /v1/bulk/runs: retry or redrive FAILED runs named by id or chosen by a runs search's filters; answered per
run (ok, not_found, refused with the reason), idempotent (a run re-queued is not FAILED any more), at most 100 a
request (then next_cursor), each re-queue audited as a single one is, and never another tenant's run."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import GLOBEX
from tests.api.test_dlq_dismiss import compensated_step_run
from tests.api.test_routes import _failed_run

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ALICE = "tickwork-tenant-acme/alice"


def bulk(api, body: dict[str, Any], **kwargs: Any) -> Any:
    return api.post("/v1/bulk/runs", body, **kwargs)


def outcomes(reply) -> dict[str, str]:
    assert reply.status == 200, reply.text
    return {item["run_id"]: item["outcome"] for item in reply.json["items"]}


def failed_runs_of(api, pipeline, job: dict[str, Any], count: int, **kwargs: Any) -> list[str]:
    runs = [api.post(f"/v1/jobs/{job['id']}/trigger", **kwargs).json["id"] for _ in range(count)]
    pipeline.drain()
    assert {api.get(f"/v1/runs/{run}", **kwargs).json["status"] for run in runs} == {"FAILED"}
    return runs


def globex_failed_run(api, pipeline, **spec: Any) -> str:
    job = api.create(identity=GLOBEX, payload={"fail_attempts": 5}, retry={"max_attempts": 1}, **spec)
    (run,) = failed_runs_of(api, pipeline, job, 1, identity=GLOBEX)
    return run


def audited(api, run_id: str, action: str) -> list[dict[str, Any]]:
    return api.get("/v1/audit", query={"resource": run_id, "action": action}).json["items"]


def test_retry_a_job_s_failed_runs_by_filters_then_again_retries_none_twice_each_audited(api, pipeline):
    job, first = _failed_run(api, pipeline, tags={"team": "pay"})
    runs = [first["id"], *failed_runs_of(api, pipeline, job, 2)]
    _other, others_run = _failed_run(api, pipeline, name="other")
    theirs = globex_failed_run(api, pipeline, tags={"team": "pay"})

    pipeline.calls.clear()
    reply = bulk(api, {"action": "retry", "filters": {"job_id": job["id"], "status": "FAILED"}})
    assert pipeline.calls.count("Scan") == 0  # the runs index
    assert outcomes(reply) == dict.fromkeys(runs, "ok")
    assert {item["status"] for item in reply.json["items"]} == {"QUEUED"}
    assert reply.json["next_cursor"] is None

    again = bulk(api, {"action": "retry", "filters": {"job_id": job["id"]}})
    assert outcomes(again) == {}  # QUEUED now: nothing FAILED is found, nothing re-queued twice
    for run in runs:
        (record,) = audited(api, run, "run.retry")
        assert record["actor"]["display"] == ALICE
        assert record["changes"]["status"] == {"before": "FAILED", "after": "QUEUED"}
        assert api.get(f"/v1/runs/{run}").json["status"] == "QUEUED"
    assert api.get(f"/v1/runs/{others_run['id']}").json["status"] == "FAILED"  # another job's: not selected
    assert api.get(f"/v1/runs/{theirs}", identity=GLOBEX).json["status"] == "FAILED"  # another tenant's

    pipeline.drain()  # they fail again (the payload still asks it), each a second execution
    assert {api.get(f"/v1/runs/{run}").json["requeues"] for run in runs} == {1}


def test_redrive_by_tag_requeues_the_team_s_dead_letters_and_leaves_a_dismissed_one_saying_why(api, pipeline):
    job, kept = _failed_run(api, pipeline, tags={"team": "data"})
    (dismissed,) = failed_runs_of(api, pipeline, job, 1)
    assert api.post(f"/v1/dlq/{dismissed}/dismiss").status == 200

    reply = bulk(api, {"action": "redrive", "filters": {"tag": "team=data"}})
    assert outcomes(reply) == {kept["id"]: "ok", dismissed: "refused"}
    refused = next(item for item in reply.json["items"] if item["outcome"] == "refused")
    assert (refused["status"], refused["reason"]) == ("FAILED", "dismissed")
    assert "retry it" in refused["message"]
    assert [r["action"] for r in audited(api, kept["id"], "run.redrive")] == ["run.redrive"]
    assert api.get(f"/v1/runs/{dismissed}").json["status"] == "FAILED"

    retried = bulk(api, {"action": "retry", "run_ids": [dismissed]})  # a dismissed run is still retried
    assert outcomes(retried) == {dismissed: "ok"}


def test_by_ids_each_answered_not_found_for_unknown_and_another_tenant_s_refused_with_its_reason(api, pipeline):
    _job, mine = _failed_run(api, pipeline)
    theirs = globex_failed_run(api, pipeline)
    _workflow_run, step_run = compensated_step_run(api, pipeline)
    unknown = "j" + "0" * 25 + ".1893456000000"

    reply = bulk(api, {"action": "retry", "run_ids": [mine["id"], theirs, unknown, step_run, mine["id"]]})
    assert outcomes(reply) == {mine["id"]: "ok", theirs: "not_found", unknown: "not_found", step_run: "refused"}
    step = next(item for item in reply.json["items"] if item["run_id"] == step_run)
    assert step["reason"] == "workflow_run_not_failed"
    assert api.get(f"/v1/runs/{theirs}", identity=GLOBEX).json["status"] == "FAILED"

    again = bulk(api, {"action": "retry", "run_ids": [mine["id"]]})
    assert outcomes(again) == {mine["id"]: "refused"}
    assert again.json["items"][0]["reason"] == "not_failed"
    assert len(audited(api, mine["id"], "run.retry")) == 1


def test_a_selection_past_the_cap_is_answered_a_page_at_a_time_with_a_cursor(api, pipeline, monkeypatch):
    from tickwork.control import bulk_runs

    monkeypatch.setattr(bulk_runs, "MAX_BULK_RUNS", 2)
    job, first = _failed_run(api, pipeline)
    runs = {first["id"], *failed_runs_of(api, pipeline, job, 2)}
    page = bulk(api, {"action": "retry", "filters": {"job_id": job["id"]}})
    assert len(outcomes(page)) == 2
    assert page.json["next_cursor"]
    done = set(outcomes(page))
    while page.json["next_cursor"]:
        page = bulk(api, {"action": "retry", "filters": {"job_id": job["id"]}, "cursor": page.json["next_cursor"]})
        done |= set(outcomes(page))
    assert done == runs
    assert {api.get(f"/v1/runs/{run}").json["status"] for run in runs} == {"QUEUED"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "retry", "filters": {"status": "SUCCEEDED"}}, "filters.status"),
        ({"action": "retry"}, "filters"),
        ({"action": "retry", "run_ids": ["x"], "filters": {}}, "filters"),
        ({"action": "retry", "run_ids": ["x"], "cursor": "abc"}, "cursor"),
        ({"action": "rerun", "filters": {}}, "action"),
        ({"action": "retry", "filters": {"tag": "no-equals"}}, "filters.tag"),
        ({"action": "retry", "filters": {"job_id": "nope"}}, "filters.job_id"),
        ({"action": "retry", "run_ids": [f"r{i}" for i in range(101)]}, "run_ids"),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_changes_nothing(api, pipeline, body, field):
    _job, failed = _failed_run(api, pipeline)
    reply = bulk(api, body)
    assert reply.status == 422, reply.text
    assert field in [error["field"] for error in reply.json["errors"]], reply.json
    assert api.get(f"/v1/runs/{failed['id']}").json["status"] == "FAILED"
