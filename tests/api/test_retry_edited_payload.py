"""POST /v1/runs/{id}/retry with `payload`: the run runs again with that payload, checked by its job type's model
as at create (a bad one is a 422 naming the field, and nothing changes); the audit record has the payload before
and after, and the run says it was edited, and by whom."""

from __future__ import annotations

import pytest

from tests.api.test_dlq_dismiss import compensated_step_run
from tests.api.test_routes import _failed_run

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ALICE = "tickwork-tenant-acme/alice"


def test_a_retry_with_a_payload_runs_it_with_that_payload_and_records_the_edit(api, pipeline):
    job, failed = _failed_run(api, pipeline)
    retried = api.post(f"/v1/runs/{failed['id']}/retry", {"payload": {"fixed": True}})
    assert retried.status == 202, retried.text
    assert retried.json["status"] == "QUEUED"
    assert retried.json["payload"] == {"fixed": True}
    assert retried.json["payload_edited_by"] == ALICE
    assert retried.json["payload_edited_at"] is not None

    pipeline.drain()
    run = api.get(f"/v1/runs/{failed['id']}").json
    assert (run["status"], run["attempts"], run["requeues"]) == ("SUCCEEDED", 1, 1)
    assert (run["payload"], run["payload_edited_by"]) == ({"fixed": True}, ALICE)
    assert api.get(f"/v1/runs/{failed['id']}/result").json == {"fixed": True}
    assert api.get(f"/v1/jobs/{job['id']}").json["payload"] == {"fail_attempts": 5}  # the job's own is unchanged

    (record,) = api.get("/v1/audit", query={"resource": failed["id"], "action": "run.retry"}).json["items"]
    assert record["actor"]["display"] == ALICE
    assert record["changes"]["payload"] == {"before": {"fail_attempts": 5}, "after": {"fixed": True}}
    assert record["changes"]["status"] == {"before": "FAILED", "after": "QUEUED"}


def test_a_retry_without_a_payload_keeps_the_one_it_had(api, pipeline):
    _job, failed = _failed_run(api, pipeline)
    api.post(f"/v1/runs/{failed['id']}/retry", {"payload": {"fail_attempts": 9}})
    pipeline.drain()
    again = api.post(f"/v1/runs/{failed['id']}/retry", {"from_checkpoint": False})
    assert again.status == 202
    assert again.json["payload"] == {"fail_attempts": 9}
    records = api.get("/v1/audit", query={"resource": failed["id"], "action": "run.retry"}).json["items"]
    assert sorted("payload" in r["changes"] for r in records) == [False, True]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"payload": {"fail_attempts": "twice"}}, "payload.fail_attempts"),
        ({"payload": ["not", "an", "object"]}, "payload"),
        ({"payload": None}, "payload"),
    ],
)
def test_a_bad_payload_is_422_naming_the_field_and_changes_nothing(api, pipeline, body, field):
    _job, failed = _failed_run(api, pipeline)
    pipeline.calls.clear()
    refused = api.post(f"/v1/runs/{failed['id']}/retry", body)
    assert refused.status == 422, refused.text
    assert refused.fields == [field]
    assert api.get(f"/v1/runs/{failed['id']}").json == failed
    assert sum(pipeline.calls.count(op) for op in ("UpdateItem", "PutItem", "TransactWriteItems")) == 0


def test_a_retry_with_a_payload_of_a_run_its_retry_cannot_requeue_is_409_with_its_reason(api, pipeline):
    _, step_run = compensated_step_run(api, pipeline)
    refused = api.post(f"/v1/runs/{step_run}/retry", {"payload": {"x": 1}})
    assert refused.status == 409
    assert refused.json["reason"] == "workflow_run_not_failed"
    assert api.get(f"/v1/runs/{step_run}").json["payload_edited_at"] is None


def test_a_retry_with_a_payload_of_a_cancelled_job_s_run_is_skipped_cancelled_as_any_retry(api, pipeline):
    job, failed = _failed_run(api, pipeline)
    assert api.delete(f"/v1/jobs/{job['id']}").status in (200, 202, 204)
    retried = api.post(f"/v1/runs/{failed['id']}/retry", {"payload": {"fixed": True}})
    assert retried.status == 202, retried.text
    pipeline.drain()
    run = api.get(f"/v1/runs/{failed['id']}").json
    assert (run["status"], run["skip_reason"]) == ("SKIPPED", "cancelled")
    assert run["payload"] == {"fixed": True}  # recorded with what it would have run with


def test_a_retry_with_a_payload_runs_through_a_freeze_as_any_retry_asked_for_by_hand(api, pipeline):
    job, failed = _failed_run(api, pipeline)
    freeze = {"selector": {"job_ids": [job["id"]]}, "for_seconds": 1800, "reason": "deploy"}
    assert api.post("/v1/freezes", freeze).status == 201
    assert api.post(f"/v1/runs/{failed['id']}/retry", {"payload": {"fixed": True}}).status == 202
    pipeline.drain()
    run = api.get(f"/v1/runs/{failed['id']}").json
    assert (run["status"], run["blocked_by"]) == ("SUCCEEDED", None)  # tickwork.model.freezes.subject_to_freezes
