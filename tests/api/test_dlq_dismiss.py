"""The DLQ's entries say whether they can be retried and why not; one that cannot is dismissed
(POST /v1/dlq/{run_id}/dismiss), leaving the DLQ and keeping its run record, attributed and audited."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ACME, GLOBEX
from tests.api.test_routes import _failed_run
from tests.api.test_workflow_routes import create, run_to_the_end

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

# a books, b fails: a is compensated and the workflow run ends COMPENSATED, b's run FAILED in the DLQ.
SAGA: dict[str, Any] = {
    "name": "saga",
    "schedule": {"cron": "0 2 * * *"},
    "retry": {"max_attempts": 1},
    "steps": [
        {"id": "a", "type": "echo", "payload": {"booking": "A-1"}, "compensate": {"type": "echo", "payload": {}}},
        {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"fail_attempts": 9}},
    ],
}


def compensated_step_run(api, pipeline) -> tuple[dict[str, Any], str]:
    """A COMPENSATED workflow run and its failed step's run id."""
    run = run_to_the_end(api, pipeline, create(api, SAGA))
    assert run["status"] == "COMPENSATED", run
    return run, run["steps"]["b"]["run_id"]


def dlq_entry(api, run_id: str, **kwargs: Any) -> dict[str, Any] | None:
    items = api.get("/v1/dlq", **kwargs).json["items"]
    return next((item for item in items if item["id"] == run_id), None)


def test_a_failed_step_of_a_compensated_workflow_run_is_not_stuck_in_the_dlq(api, pipeline):
    """The defect: its entry offered a retry the API refused (409), redrive said `not_redriven` without a reason,
    and nothing could take it out of the DLQ."""
    workflow_run, step_run = compensated_step_run(api, pipeline)
    entry = dlq_entry(api, step_run)
    assert entry is not None
    assert entry["retry"]["retryable"] is False
    assert entry["retry"]["reason"] == "workflow_run_not_failed"
    assert "COMPENSATED" in entry["retry"]["message"]

    dismissed = api.post(f"/v1/dlq/{step_run}/dismiss")
    assert dismissed.status == 200, dismissed.text
    assert dismissed.json["status"] == "FAILED"
    assert dismissed.json["dismissed_at"] == pipeline.clock.now().isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
    assert dismissed.json["dismissed_by"] == "tickwork-tenant-acme/alice"
    assert dlq_entry(api, step_run) is None
    kept = api.get(f"/v1/runs/{step_run}")
    assert kept.status == 200
    assert (kept.json["status"], kept.json["error"]) == ("FAILED", dismissed.json["error"])
    assert api.get(f"/v1/workflow-runs/{workflow_run['id']}").json["status"] == "COMPENSATED"


def test_a_retryable_entry_says_so_and_a_workflow_step_s_names_its_workflow_run(api, pipeline):
    _job, failed = _failed_run(api, pipeline)
    assert dlq_entry(api, failed["id"])["retry"] == {"retryable": True, "reason": None, "message": None}

    body = {**SAGA, "steps": [{"id": "b", "type": "echo", "payload": {"fail_attempts": 9}}]}
    workflow_run = run_to_the_end(api, pipeline, create(api, body))
    assert workflow_run["status"] == "FAILED"
    step = dlq_entry(api, workflow_run["steps"]["b"]["run_id"])
    assert (step["retry"]["retryable"], step["retry"]["reason"]) == (False, "workflow_step")
    assert workflow_run["id"] in step["retry"]["message"]


def test_retry_and_redrive_of_an_entry_that_cannot_be_retried_answer_its_reason(api, pipeline):
    _, step_run = compensated_step_run(api, pipeline)
    retried = api.post(f"/v1/runs/{step_run}/retry")
    assert retried.status == 409
    assert retried.json["reason"] == "workflow_run_not_failed"
    assert "COMPENSATED" in retried.json["detail"]

    unknown = "j" + "0" * 25 + ".1795262400000"
    redriven = api.post("/v1/dlq/redrive", {"run_ids": [step_run, unknown]})
    assert redriven.status == 202
    assert redriven.json["redriven"] == 0
    assert redriven.json["not_redriven"] == [step_run, unknown]
    refused = {item["run_id"]: item["reason"] for item in redriven.json["refused"]}
    assert refused == {step_run: "workflow_run_not_failed", unknown: "not_found"}
    assert all(item["message"] for item in redriven.json["refused"])
    assert api.get(f"/v1/runs/{step_run}").json["status"] == "FAILED"


def test_dismiss_is_idempotent_and_audited_once(api, pipeline):
    _, step_run = compensated_step_run(api, pipeline)
    first = api.post(f"/v1/dlq/{step_run}/dismiss")
    pipeline.clock.advance(5)
    again = api.post(f"/v1/dlq/{step_run}/dismiss")
    assert again.status == 200
    assert again.json == first.json  # the first dismissal's time and author stand
    records = api.get("/v1/audit", query={"resource": step_run}).json["items"]
    assert [(r["action"], r["actor"]["display"]) for r in records] == [("run.dismiss", "tickwork-tenant-acme/alice")]
    assert records[0]["changes"]["dlq"] == {"before": True, "after": False}


def test_a_dismissed_run_can_still_be_retried_and_leaves_its_dismissal_behind(api, pipeline):
    _job, failed = _failed_run(api, pipeline)
    assert api.post(f"/v1/dlq/{failed['id']}/dismiss").status == 200
    assert dlq_entry(api, failed["id"]) is None
    retried = api.post(f"/v1/runs/{failed['id']}/retry")
    assert retried.status == 202, retried.text
    assert (retried.json["status"], retried.json["dismissed_at"]) == ("QUEUED", None)
    pipeline.drain()  # fails again (fail_attempts: 5): back in the DLQ
    assert dlq_entry(api, failed["id"]) is not None
    assert api.get(f"/v1/runs/{failed['id']}").json["dismissed_by"] is None


def test_dismiss_of_a_run_not_failed_is_409_and_of_another_tenant_s_or_an_unknown_one_404(api, pipeline):
    job = api.create(payload={})
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    pipeline.drain()
    not_failed = api.post(f"/v1/dlq/{run['id']}/dismiss")
    assert not_failed.status == 409
    assert "SUCCEEDED" in not_failed.json["detail"]

    _job, failed = _failed_run(api, pipeline)
    assert api.post(f"/v1/dlq/{failed['id']}/dismiss", identity=GLOBEX).status == 404
    assert api.post("/v1/dlq/" + "j" + "0" * 25 + ".1795262400000/dismiss").status == 404
    assert api.post("/v1/dlq/not-a-run/dismiss").status in (404, 422)
    assert dlq_entry(api, failed["id"], identity=ACME) is not None  # nothing changed
