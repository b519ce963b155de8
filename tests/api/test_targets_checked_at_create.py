"""A job's target is checked against what the stack may reach when the job is created or changed, not when it
runs: a `lambda` function outside InvokableFunctionArns (the template's default: this account's tickwork-job-*
in this region), an `http` address in a private network outside HttpAllowlist. Each is a 422 naming the field,
at create, at PATCH and in a workflow's step, and nothing is written. What only a run can know (whether the
function exists) is said in the error."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_workflow_routes import DIAMOND, with_step

ACCOUNT = "123456789012"  # moto's, which the local template resolves AWS::AccountId to
WRITES = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:TransactWriteItems", "sqs:SendMessage")


def _lambda(function: str) -> dict[str, Any]:
    return {
        "name": "calls a function",
        "type": "lambda",
        "schedule": {"rate": "1 hour"},
        "payload": {"function_arn": function},
    }


@pytest.mark.parametrize(
    "function",
    [
        "tickwork-job-report",
        "tickwork-job-report:live",
        f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:tickwork-job-report",
    ],
)
def test_a_function_the_stack_may_invoke_is_accepted(api, function):
    assert api.post("/v1/jobs", _lambda(function)).status == 201


@pytest.mark.parametrize(
    "function",
    [
        "my-fn",
        f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:my-fn",
        "arn:aws:lambda:us-east-1:210987654321:function:tickwork-job-report",  # another account's
        f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:tickwork-job-report",  # another region's
    ],
)
def test_a_function_outside_invokable_function_arns_is_422_at_create_and_writes_nothing(api, pipeline, function):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _lambda(function))
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.function_arn"]
    message = reply.json["errors"][0]["message"]
    assert "InvokableFunctionArns" in message
    assert f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:tickwork-job-*" in message  # what the stack allows
    assert "known only when a run invokes it" in message  # what cannot be checked now
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def test_a_patch_to_a_function_outside_invokable_function_arns_is_422_and_changes_nothing(api):
    job = api.post("/v1/jobs", _lambda("tickwork-job-report")).json
    reply = api.patch(f"/v1/jobs/{job['id']}", {"payload": {"function_arn": "my-fn"}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.function_arn"]
    assert api.get(f"/v1/jobs/{job['id']}").json["payload"]["function_arn"] == "tickwork-job-report"


def test_a_workflow_step_and_its_compensation_are_checked_alike(api):
    step = {"type": "lambda", "payload": {"function_arn": "my-fn"}}
    reply = api.post("/v1/workflows", with_step(DIAMOND, "a", **step))
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[0].payload.function_arn"]
    undo = {"compensate": {"type": "lambda", "payload": {"function_arn": "other-fn"}}}
    reply = api.post("/v1/workflows", with_step(DIAMOND, "a", **undo))
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[0].compensate.payload.function_arn"]


def test_an_http_address_in_a_private_network_outside_the_allowlist_names_the_parameter(api):
    body = {
        "name": "calls home",
        "type": "http",
        "schedule": {"rate": "1 hour"},
        "payload": {"url": "http://10.1.2.3/"},
    }
    reply = api.post("/v1/jobs", body)
    assert reply.status == 422, reply.text
    assert reply.fields == ["payload.url"]
    assert "HttpAllowlist" in reply.json["errors"][0]["message"]  # the template parameter a user sets
