"""The workflow routes of the v1 contract, through the real handler, against moto and the real pipeline: each
route's answer, the lifecycle's conflicts, and workflow runs driven to their end in-process (trigger, then the
executor delivering every step's run, as the job tests drive runs)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tickwork.model.policies import Band

from tests.api.conftest import ACME
from tests.conftest import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

STEP_DEFAULTS = {
    "payload": {},
    "depends_on": [],
    "trigger_rule": "all_success",
    "condition": None,
    "retry": None,
    "timeout_seconds": None,
    "priority": None,
    "concurrency": None,
    "rate_limit": None,
    "compensate": None,
    "irreversible": False,
    "ordering": None,
    "deadline": None,
    "variants": [],
}
ONE_ATTEMPT = {"max_attempts": 1}

# The diamond: a -> b, a -> c, b + c -> d. b's payload takes a's result; d's takes b's and c's.
DIAMOND: dict[str, Any] = {
    "name": "diamond",
    "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
    "steps": [
        {"id": "a", "type": "echo", "payload": {"rows": 3}},
        {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"from_a": {"$from": "steps.a.result.rows"}}},
        {"id": "c", "type": "echo", "depends_on": ["a"], "payload": {"side": "c"}},
        {
            "id": "d",
            "type": "echo",
            "depends_on": ["b", "c"],
            "payload": {"b_saw": {"$from": "steps.b.result.from_a"}, "c_said": {"$from": "steps.c.result.side"}},
        },
    ],
    "retry": ONE_ATTEMPT,
}


def spec(base: dict[str, Any] = DIAMOND, **changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(base)
    body.update(copy.deepcopy(changes))
    return body


def with_step(base: dict[str, Any], step_id: str, **changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(base)
    for step in body["steps"]:
        if step["id"] == step_id:
            step.update(changes)
    return body


def create(api, body: dict[str, Any] | None = None, identity: dict[str, Any] = ACME) -> dict[str, Any]:
    reply = api.post("/v1/workflows", body or spec(), identity=identity)
    assert reply.status == 201, reply.text
    return reply.json


def trigger(api, workflow: dict[str, Any]) -> dict[str, Any]:
    reply = api.post(f"/v1/workflows/{workflow['id']}/trigger")
    assert reply.status == 202, reply.text
    return reply.json


def run_to_the_end(api, pipeline, workflow: dict[str, Any]) -> dict[str, Any]:
    """Trigger a workflow run, deliver every step's run until the queues are empty, and answer the run."""
    started = trigger(api, workflow)
    pipeline.drain()
    reply = api.get(f"/v1/workflow-runs/{started['id']}")
    assert reply.status == 200, reply.text
    return reply.json


def statuses(run: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {sid: (step["status"], step["skip_reason"]) for sid, step in run["steps"].items()}


# ---------------------------------------------------------------- create, read, list


def test_create_then_get_a_workflow(api):
    created = api.post("/v1/workflows", spec(tags={"team": "data"}))
    assert created.status == 201, created.text
    assert created.headers["content-type"] == "application/json"
    workflow = created.json
    assert workflow["id"].startswith("w")
    assert len(workflow["id"]) == 26
    assert workflow["tenant"] == "acme"
    assert workflow["name"] == "diamond"
    assert workflow["state"] == "ACTIVE"
    assert workflow["schedule"]["cron"] == "0 2 * * *"
    assert workflow["schedule"]["timezone"] == "Europe/Paris"
    assert workflow["next_run_at"] == "2026-11-22T01:00:00.000Z"  # 02:00 in Paris
    assert workflow["created_at"] == workflow["updated_at"] == "2026-11-21T12:00:00.000Z"
    assert workflow["version"] == 1
    assert (workflow["priority"], workflow["timeout_seconds"]) == (5, 300)
    assert workflow["retry"]["max_attempts"] == 1
    assert workflow["tags"] == {"team": "data"}
    assert workflow["steps"] == [{**STEP_DEFAULTS, **step} for step in DIAMOND["steps"]]

    got = api.get(f"/v1/workflows/{workflow['id']}")
    assert got.status == 200
    assert got.json == workflow


def docs_example() -> dict[str, Any]:
    """The worked example of docs/workflows.md: its first JSON block."""
    text = (ROOT / "docs" / "workflows.md").read_text()
    return json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])


def test_the_docs_nightly_etl_example_is_accepted_as_written(api):
    nightly = docs_example()
    workflow = create(api, nightly)
    assert workflow["name"] == "nightly-etl"
    assert [s["id"] for s in workflow["steps"]] == ["extract", "transform", "load", "alert"]
    assert workflow["steps"][3]["trigger_rule"] == "one_failed"
    assert workflow["steps"][2]["condition"] == "steps.transform.result.rows > `0`"
    assert workflow["next_run_at"] == "2026-11-22T01:00:00.000Z"


def test_a_lambda_step_that_names_no_function_is_refused_naming_the_field(api):
    """The docs' production shape of `load` is a `lambda` step: without the function it calls, a 422."""
    nightly = docs_example()
    nightly["steps"][2] = {"id": "load", "type": "lambda", "depends_on": ["transform"]}
    reply = api.post("/v1/workflows", nightly)
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[2].payload.function_arn"]


def test_list_newest_first_with_filters_and_pages(api, pipeline):
    first = create(api, spec(name="etl-nightly"))
    pipeline.clock.advance(0.001)
    second = create(api, spec(name="etl-hourly"))
    pipeline.clock.advance(0.001)
    third = create(api, spec(name="report"))
    api.post(f"/v1/workflows/{second['id']}/pause")

    listed = api.get("/v1/workflows")
    assert listed.status == 200
    assert [w["id"] for w in listed.json["items"]] == [third["id"], second["id"], first["id"]]
    assert listed.json["next_cursor"] is None

    by_name = api.get("/v1/workflows", query={"name_prefix": "etl-"})
    assert [w["id"] for w in by_name.json["items"]] == [second["id"], first["id"]]
    paused = api.get("/v1/workflows", query={"state": "PAUSED"})
    assert [w["id"] for w in paused.json["items"]] == [second["id"]]
    assert paused.json["items"][0]["state"] == "PAUSED"

    page = api.get("/v1/workflows", query={"limit": 2})
    assert [w["id"] for w in page.json["items"]] == [third["id"], second["id"]]
    rest = api.get("/v1/workflows", query={"limit": 2, "cursor": page.json["next_cursor"]})
    assert [w["id"] for w in rest.json["items"]] == [first["id"]]
    assert rest.json["next_cursor"] is None


# ---------------------------------------------------------------- change, pause, resume, cancel


def test_patch_changes_fields_and_the_steps(api, pipeline):
    workflow = create(api)
    pipeline.clock.advance(60)
    new_steps = [{"id": "only", "type": "echo", "payload": {"v": 2}}]
    changed = api.patch(
        f"/v1/workflows/{workflow['id']}",
        {"name": "renamed", "steps": new_steps, "priority": 8, "schedule": {"cron": "30 12 * * *"}},
    )
    assert changed.status == 200, changed.text
    body = changed.json
    assert body["name"] == "renamed"
    assert body["steps"] == [{**STEP_DEFAULTS, **new_steps[0]}]
    assert body["priority"] == 8
    assert body["schedule"]["cron"] == "30 12 * * *"
    assert body["next_run_at"] == "2026-11-21T12:30:00.000Z"
    assert body["version"] == workflow["version"] + 1
    assert body["updated_at"] == "2026-11-21T12:01:00.000Z"
    assert api.get(f"/v1/workflows/{workflow['id']}").json == body


def test_a_patch_never_changes_a_run_in_progress(api, pipeline):
    workflow = create(api)
    started = trigger(api, workflow)
    replaced = api.patch(f"/v1/workflows/{workflow['id']}", {"steps": [{"id": "z", "type": "echo"}]})
    assert replaced.status == 200, replaced.text
    pipeline.drain()
    finished = api.get(f"/v1/workflow-runs/{started['id']}").json
    assert set(finished["steps"]) == {"a", "b", "c", "d"}  # the steps it started with
    assert finished["status"] == "SUCCEEDED"
    pipeline.clock.advance(1)  # a manual run's id is its instant: the next trigger's is another
    after = run_to_the_end(api, pipeline, workflow)
    assert set(after["steps"]) == {"z"}  # the next run has the new ones


def test_pause_and_resume_are_idempotent_as_for_jobs(api, pipeline):
    workflow = create(api)
    paused = api.post(f"/v1/workflows/{workflow['id']}/pause")
    assert paused.status == 200, paused.text
    assert paused.json["state"] == "PAUSED"
    assert paused.json["paused_at"] == "2026-11-21T12:00:00.000Z"
    pipeline.calls.clear()
    again = api.post(f"/v1/workflows/{workflow['id']}/pause")
    assert again.status == 200
    assert again.json == paused.json  # no change, nothing written
    assert pipeline.calls.count("UpdateItem") == pipeline.calls.count("PutItem") == 0

    resumed = api.post(f"/v1/workflows/{workflow['id']}/resume")
    assert resumed.status == 200
    assert resumed.json["state"] == "ACTIVE"
    assert resumed.json["resumed_at"] == "2026-11-21T12:00:00.000Z"
    assert api.post(f"/v1/workflows/{workflow['id']}/resume").json == resumed.json


def test_delete_cancels_the_workflow_and_then_conflicts(api):
    workflow = create(api)
    cancelled = api.delete(f"/v1/workflows/{workflow['id']}")
    assert cancelled.status == 200, cancelled.text
    assert cancelled.json["state"] == "CANCELLED"
    assert cancelled.json["next_run_at"] is None
    assert api.get(f"/v1/workflows/{workflow['id']}").json["state"] == "CANCELLED"
    assert api.delete(f"/v1/workflows/{workflow['id']}").json["state"] == "CANCELLED"  # idempotent
    assert api.post(f"/v1/workflows/{workflow['id']}/resume").status == 409
    assert api.patch(f"/v1/workflows/{workflow['id']}", {"name": "again"}).status == 409


# ---------------------------------------------------------------- workflow runs


def test_trigger_queues_the_roots_and_the_run_lists_every_step(api, pipeline):
    workflow = create(api)
    run = trigger(api, workflow)
    assert run["id"] == f"{workflow['id']}.{1795262400000:013d}.m"  # 2026-11-21T12:00:00Z, manual
    assert run["workflow_id"] == workflow["id"]
    assert run["tenant"] == "acme"
    assert run["trigger"] == "manual"
    assert run["status"] == "RUNNING"
    assert run["scheduled_for"] == "2026-11-21T12:00:00.000Z"
    assert run["finished_at"] is None
    assert list(run["steps"]) == ["a", "b", "c", "d"]
    assert run["steps"]["a"]["status"] == "QUEUED"
    assert run["steps"]["a"]["run_id"] == f"{run['id']}.s-a"
    for pending in ("b", "c", "d"):
        assert run["steps"][pending] == {
            "status": "PENDING",
            "run_id": None,
            "skip_reason": None,
            "attempts": 0,
            "started_at": None,
            "finished_at": None,
            "progress": None,
        }
    assert api.get(f"/v1/workflow-runs/{run['id']}").json == run

    listed = api.get(f"/v1/workflows/{workflow['id']}/runs")
    assert listed.status == 200
    assert listed.json == {"items": [run], "next_cursor": None}


def test_the_diamond_runs_to_the_end_passing_results_downstream(api, pipeline):
    workflow = create(api)
    run = run_to_the_end(api, pipeline, workflow)
    assert run["status"] == "SUCCEEDED"
    assert run["finished_at"] is not None
    assert statuses(run) == dict.fromkeys("abcd", ("SUCCEEDED", None))
    for sid, step in run["steps"].items():
        assert step["run_id"] == f"{run['id']}.s-{sid}"
        assert step["attempts"] == 1
        assert step["started_at"] <= step["finished_at"]

    # Each step's run is an ordinary run, which names its workflow run and step.
    d_run = api.get(f"/v1/runs/{run['steps']['d']['run_id']}")
    assert d_run.status == 200, d_run.text
    assert d_run.json["status"] == "SUCCEEDED"
    assert d_run.json["job_id"] == workflow["id"]
    assert (d_run.json["workflow_run_id"], d_run.json["step_id"]) == (run["id"], "d")
    assert d_run.json["payload"] == {"b_saw": 3, "c_said": "c"}
    assert api.get(f"/v1/runs/{run['steps']['b']['run_id']}/result").json == {"from_a": 3}
    assert api.get(f"/v1/runs/{run['steps']['d']['run_id']}/result").json == {"b_saw": 3, "c_said": "c"}

    succeeded = api.get(f"/v1/workflows/{workflow['id']}/runs", query={"status": "SUCCEEDED"})
    assert [r["id"] for r in succeeded.json["items"]] == [run["id"]]
    assert api.get(f"/v1/workflows/{workflow['id']}/runs", query={"status": "RUNNING"}).json["items"] == []


def test_a_failing_branch_skips_its_downstream_and_an_alert_step_handles_it(api, pipeline):
    body = with_step(DIAMOND, "c", payload={"fail_attempts": 9})
    body["steps"].append({"id": "alert", "type": "echo", "depends_on": ["b", "c", "d"], "trigger_rule": "one_failed"})
    run = run_to_the_end(api, pipeline, create(api, body))
    assert statuses(run) == {
        "a": ("SUCCEEDED", None),
        "b": ("SUCCEEDED", None),
        "c": ("FAILED", None),
        "d": ("SKIPPED", "upstream_failed"),
        "alert": ("SUCCEEDED", None),
    }
    assert run["steps"]["d"]["run_id"] is None  # a skipped step has no run
    assert run["status"] == "SUCCEEDED"  # the failure reached no leaf unhandled: alert ran and succeeded


def test_a_false_condition_skips_the_step_and_the_run_succeeds(api, pipeline):
    body = with_step(DIAMOND, "c", condition="steps.a.result.rows > `10`")
    run = run_to_the_end(api, pipeline, create(api, body))
    assert statuses(run)["c"] == ("SKIPPED", "condition_false")
    assert statuses(run)["d"] == ("SKIPPED", "upstream_skipped")
    assert run["status"] == "SUCCEEDED"


def test_retry_reruns_the_failed_step_and_what_it_skipped_and_nothing_that_succeeded(api, pipeline):
    workflow = create(api, with_step(DIAMOND, "c", payload={"fail_attempts": 9}))
    failed = run_to_the_end(api, pipeline, workflow)
    assert failed["status"] == "FAILED"
    assert statuses(failed)["d"] == ("SKIPPED", "upstream_failed")
    a_before = api.get(f"/v1/runs/{failed['steps']['a']['run_id']}").json

    retried = api.post(f"/v1/workflow-runs/{failed['id']}/retry")
    assert retried.status == 202, retried.text
    assert retried.json["status"] == "RUNNING"
    assert retried.json["finished_at"] is None
    assert retried.json["steps"]["c"]["status"] == "QUEUED"
    assert retried.json["steps"]["d"]["status"] == "PENDING"
    assert retried.json["steps"]["a"]["status"] == retried.json["steps"]["b"]["status"] == "SUCCEEDED"

    pipeline.drain()  # c fails again: its payload says so
    again = api.get(f"/v1/workflow-runs/{failed['id']}").json
    assert again["status"] == "FAILED"
    assert statuses(again)["c"] == ("FAILED", None)
    assert statuses(again)["d"] == ("SKIPPED", "upstream_failed")
    assert api.get(f"/v1/runs/{failed['steps']['c']['run_id']}").json["requeues"] == 1
    assert api.get(f"/v1/runs/{failed['steps']['a']['run_id']}").json == a_before  # not run again


def test_retry_of_a_run_that_did_not_fail_is_a_conflict(api, pipeline):
    workflow = create(api)
    running = trigger(api, workflow)
    assert api.post(f"/v1/workflow-runs/{running['id']}/retry").status == 409
    pipeline.drain()
    succeeded = api.post(f"/v1/workflow-runs/{running['id']}/retry")
    assert succeeded.status == 409
    assert succeeded.headers["content-type"] == "application/problem+json"
    assert api.get(f"/v1/workflow-runs/{running['id']}").json["status"] == "SUCCEEDED"


def test_cancel_skips_the_steps_not_started_and_a_finished_run_cannot_be_cancelled(api, pipeline):
    workflow = create(api)
    run = trigger(api, workflow)
    cancelled = api.post(f"/v1/workflow-runs/{run['id']}/cancel")
    assert cancelled.status == 200, cancelled.text
    assert cancelled.json["status"] == "CANCELLED"
    for pending in ("b", "c", "d"):
        assert cancelled.json["steps"][pending]["status"] == "SKIPPED"
        assert cancelled.json["steps"][pending]["skip_reason"] == "cancelled"
    pipeline.drain()  # a's run, queued before the cancel, is not started
    after = api.get(f"/v1/workflow-runs/{run['id']}").json
    assert after["status"] == "CANCELLED"
    assert statuses(after)["a"] == ("SKIPPED", "cancelled")
    assert api.post(f"/v1/workflow-runs/{run['id']}/cancel").status == 409

    pipeline.clock.advance(1)
    finished = run_to_the_end(api, pipeline, workflow)
    assert finished["status"] == "SUCCEEDED"
    conflict = api.post(f"/v1/workflow-runs/{finished['id']}/cancel")
    assert conflict.status == 409
    assert api.get(f"/v1/workflow-runs/{finished['id']}").json["status"] == "SUCCEEDED"


def test_unknown_ids_are_404(api):
    workflow_id = "w" + "0" * 25
    for method, path in [
        ("GET", f"/v1/workflows/{workflow_id}"),
        ("DELETE", f"/v1/workflows/{workflow_id}"),
        ("POST", f"/v1/workflows/{workflow_id}/trigger"),
        ("GET", f"/v1/workflows/{workflow_id}/runs"),
        ("GET", f"/v1/workflow-runs/{workflow_id}.1795262400000"),
        ("POST", f"/v1/workflow-runs/{workflow_id}.1795262400000.m/cancel"),
        ("GET", f"/v1/runs/{workflow_id}.1795262400000.s-a"),
    ]:
        reply = api.request(method, path)
        assert reply.status == 404, (method, path, reply.text)
        assert reply.json["title"] == "Not found"


def test_cancel_asking_for_compensation_compensates_what_succeeded_and_a_bad_body_is_refused(api, pipeline):
    body = spec(steps=[{"id": "a", "type": "echo", "payload": {"booking": "A-1"}, "compensate": {"type": "echo", "payload": {"cancel": {"$from": "steps.a.result.booking"}}}}, {"id": "b", "type": "echo", "depends_on": ["a"]}])  # fmt: skip
    workflow = create(api, body)
    run = trigger(api, workflow)
    (a_message,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [a_message])  # a SUCCEEDED, b queued

    refused = api.post(f"/v1/workflow-runs/{run['id']}/cancel", {"compensate": "please"})
    assert refused.status == 422, refused.text
    assert [e["field"] for e in refused.json["errors"]] == ["compensate"]
    assert api.get(f"/v1/workflow-runs/{run['id']}").json["status"] == "RUNNING"  # nothing written

    cancelled = api.post(f"/v1/workflow-runs/{run['id']}/cancel", {"compensate": True})
    assert cancelled.status == 200, cancelled.text
    assert (cancelled.json["status"], cancelled.json["compensating_for"]) == ("COMPENSATING", "CANCELLED")
    pipeline.drain()  # b's run is recorded SKIPPED; then a's compensation runs
    after = api.get(f"/v1/workflow-runs/{run['id']}").json
    assert after["status"] == "COMPENSATED"
    undo = after["compensations"]["a"]
    assert (undo["status"], undo["run_id"]) == ("SUCCEEDED", f"{run['id']}.c-a")
    assert api.get(f"/v1/runs/{undo['run_id']}/result").json == {"cancel": "A-1"}
    assert api.post(f"/v1/workflow-runs/{run['id']}/cancel", {"compensate": True}).status == 409
