"""Durable runs over HTTP: a retry resumes from the run's checkpoint, or with `{"from_checkpoint": false}` starts
over; a bad body is a 422 naming the field and changes nothing."""

from __future__ import annotations

import threading

import pytest
from tickwork.model.clock import iso

from tests.durable_jobtypes import RELEASE, REPORTED, STARTS

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _failed_after_a_checkpoint(api, pipeline) -> str:
    job = api.create(type="checkpoint-export", payload={"pages": 3, "fail_after_page": 0}, retry={"max_attempts": 1})
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    pipeline.drain()
    assert api.get(f"/v1/runs/{run['id']}").json["status"] == "FAILED"
    return run["id"]


@pytest.mark.parametrize(
    ("body", "starts"), [(None, [0, 1]), ({"from_checkpoint": True}, [0, 1]), ({"from_checkpoint": False}, [0, 0])]
)
def test_a_retry_resumes_from_the_checkpoint_unless_told_to_start_over(api, pipeline, body, starts):
    run_id = _failed_after_a_checkpoint(api, pipeline)
    retried = api.post(f"/v1/runs/{run_id}/retry", body) if body is not None else api.post(f"/v1/runs/{run_id}/retry")
    assert retried.status == 202, retried.text
    assert retried.json["status"] == "QUEUED"
    pipeline.drain()
    assert api.get(f"/v1/runs/{run_id}").json["status"] == "SUCCEEDED"
    assert STARTS[run_id] == starts
    assert api.get(f"/v1/runs/{run_id}/result").json == {"rows": [0, 10, 20]}


@pytest.mark.parametrize("body", [{"from_checkpoint": "no"}, {"from_checkpoint": None}, {"from_scratch": True}])
def test_a_retry_with_a_bad_body_is_refused_and_changes_nothing(api, pipeline, body):
    run_id = _failed_after_a_checkpoint(api, pipeline)
    refused = api.post(f"/v1/runs/{run_id}/retry", body)
    assert refused.status == 422
    assert {problem["field"] for problem in refused.json["errors"]} == {next(iter(body))}
    assert api.get(f"/v1/runs/{run_id}").json["status"] == "FAILED"


def test_progress_is_readable_over_http_while_the_run_is_running(api, pipeline):
    REPORTED.clear()
    RELEASE.clear()
    report = {"fraction": 0.25, "message": "page 1 of 4", "data": {"page": 1, "cursor": None}}
    job = api.create(type="progress-reports", payload={"reports": [report], "hold": True})
    run_id = api.post(f"/v1/jobs/{job['id']}/trigger").json["id"]
    worker = threading.Thread(target=pipeline.drain)
    worker.start()
    try:
        assert REPORTED.wait(timeout=30)
        running = api.get(f"/v1/runs/{run_id}").json
        assert running["status"] == "RUNNING"
        assert running["progress"] == {**report, "updated_at": iso(pipeline.clock.now())}
    finally:
        RELEASE.set()
        worker.join(timeout=60)
    done = api.get(f"/v1/runs/{run_id}").json
    assert (done["status"], done["progress"]["fraction"]) == ("SUCCEEDED", 0.25)


def test_a_report_soon_after_the_last_rides_on_the_heartbeat_not_a_write_of_its_own(api, pipeline):
    reports = [{"fraction": 0.1}, {"fraction": 0.2, "message": "second"}]
    job = api.create(type="progress-reports", payload={"reports": reports, "sleep": 25})
    run_id = api.post(f"/v1/jobs/{job['id']}/trigger").json["id"]
    pipeline.calls.clear()
    pipeline.drain()
    writes = [
        p["UpdateExpression"] for p in pipeline.calls.params("UpdateItem") if ":progress" in p["UpdateExpression"]
    ]
    assert len(writes) == 2  # the first report's own write; the second on the heartbeat's extension
    assert "lease_until" in writes[1]
    run = api.get(f"/v1/runs/{run_id}").json
    assert (run["status"], run["progress"]["fraction"], run["progress"]["message"]) == ("SUCCEEDED", 0.2, "second")
