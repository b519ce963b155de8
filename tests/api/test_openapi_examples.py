"""The OpenAPI document's request examples (what Swagger UI's "Try it out" sends): every request body has curated
ones, and each is accepted as it stands."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ACME, role_identity

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ADMIN = role_identity("tickwork-admin", session="ops")
WORKFLOW = {"name": "examples-host", "schedule": {"rate": "1 day"}, "steps": [{"id": "only", "type": "echo"}]}


def request_examples(document: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(method, path, example name, value) for every example of every request body."""
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody")
            if not body:
                continue
            examples = body["content"]["application/json"].get("examples") or {}
            assert examples, f"{method.upper()} {path} has no request example"
            found += [(method, path, name, example["value"]) for name, example in examples.items()]
    return found


def test_every_request_body_has_curated_examples_including_a_one_shot_a_zoned_cron_and_a_workflow(api):
    examples = request_examples(api.get("/v1/openapi.json").json)
    jobs = [value for method, path, _, value in examples if (method, path) == ("post", "/v1/jobs")]
    assert any("at" in job["schedule"] for job in jobs)
    assert any("cron" in job["schedule"] and job["schedule"].get("timezone", "UTC") != "UTC" for job in jobs)
    # Never the generated sample that sent at, cron and rate together (a 422).
    assert all(len({"at", "cron", "rate"} & set(job["schedule"])) == 1 for job in jobs)
    assert any(path == "/v1/workflows" and method == "post" for method, path, _, _ in examples)


def test_each_request_example_is_accepted(api):
    job = api.create(name="examples-host")
    workflow = api.post("/v1/workflows", WORKFLOW)
    assert workflow.status == 201, workflow.text
    calendar = api.post("/v1/calendars", {"name": "examples-host", "windows": [{"dates": ["2026-12-25"]}]})
    assert calendar.status == 201, calendar.text
    ids = {
        "{job_id}": job["id"],
        "{workflow_id}": workflow.json["id"],
        "{calendar_id}": calendar.json["id"],
        "{tenant}": "acme",
        # No such runs: their examples' bodies are checked before the run is looked up, so a 404 (not a 422) says
        # the body was accepted.
        "{run_id}": f"{job['id']}.1795262400000",
        "{workflow_run_id}": f"{workflow.json['id']}.1795262400000",
    }
    refused = []
    for method, path, name, value in request_examples(api.get("/v1/openapi.json").json):
        concrete = path
        for placeholder, value_id in ids.items():
            concrete = concrete.replace(placeholder, value_id)
        identity = ADMIN if path.startswith(("/v1/tenants/", "/v1/dead-letters/", "/v1/regions/")) else ACME
        reply = api.request(method.upper(), concrete, body=value, identity=identity)
        missing_run = reply.status == 404 and ("{run_id}" in path or "{workflow_run_id}" in path)
        # The dead-letter queues are empty: a 409 "nothing to redrive" says the body was accepted.
        nothing_to_redrive = reply.status == 409 and path == "/v1/dead-letters/redrive"
        # One region (RegionMode single): a 409 "for RegionMode eventual" says the body was accepted.
        one_region = reply.status == 409 and path == "/v1/regions/failover" and "RegionMode eventual" in reply.text
        if not (200 <= reply.status < 300 or missing_run or nothing_to_redrive or one_region):
            refused.append((method.upper(), path, name, reply.status, reply.text))
    assert not refused
