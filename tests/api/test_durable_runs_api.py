"""Durable runs over HTTP: a retry resumes from the run's checkpoint, or with `{"from_checkpoint": false}` starts
over; a bad body is a 422 naming the field and changes nothing."""

from __future__ import annotations

import pytest

from tests.durable_jobtypes import STARTS

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
