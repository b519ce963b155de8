"""The custom resource provider in the local runtime (`tickwork dev`): invoked as CloudFormation invokes it (Lambda's
Invoke, here of the node's own endpoint), with CloudFormation's events; its answer PUT to the pre-signed URL, here a
local server's; the job it makes seen through the API."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.conftest import load_event
from tests.e2e.conftest import Node
from tests.http_upstream import JsonUpstream, serving


class CloudFormation(JsonUpstream):
    answers: list[dict[str, Any]] = []

    def do_PUT(self) -> None:
        CloudFormation.answers.append(
            {"content_type": self.headers.get("Content-Type"), **json.loads(self.read_body())}
        )
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _lambda(node: Node) -> Any:
    """Lambda's client, at the node's endpoint (as `aws lambda invoke --endpoint-url` would be)."""
    return boto3.client(
        "lambda",
        endpoint_url=node.api.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _invoke(node: Node, event: dict[str, Any]) -> dict[str, Any]:
    answer = _lambda(node).invoke(FunctionName="tickwork-ResourceProviderFunction", Payload=json.dumps(event).encode())
    assert "FunctionError" not in answer, answer["Payload"].read()
    return json.loads(answer["Payload"].read())


def test_a_create_update_and_delete_event_make_change_and_cancel_a_job_in_the_local_runtime(node: Node) -> None:
    CloudFormation.answers = []
    with serving(CloudFormation) as url:
        response_url = f"{url}/cfn-response?X-Amz-Signature=0f1e"
        created = _invoke(node, {**load_event("cfn-job-create.json"), "ResponseURL": response_url})
        job_id = created["PhysicalResourceId"]
        job = node.api.get(f"/v1/jobs/{job_id}")
        assert (job["name"], job["priority"], job["state"]) == ("nightly-export", 7, "ACTIVE")
        update = {**load_event("cfn-job-update.json"), "ResponseURL": response_url, "PhysicalResourceId": job_id}
        assert _invoke(node, update)["PhysicalResourceId"] == job_id
        assert node.api.get(f"/v1/jobs/{job_id}")["schedule"]["cron"] == "30 4 * * *"
        delete = {**load_event("cfn-job-delete.json"), "ResponseURL": response_url, "PhysicalResourceId": job_id}
        _invoke(node, delete)
        refused = _invoke(node, {**load_event("cfn-job-create-refused.json"), "ResponseURL": response_url})
    assert node.api.get(f"/v1/jobs/{job_id}")["state"] == "CANCELLED"
    assert [a["Status"] for a in CloudFormation.answers] == ["SUCCESS", "SUCCESS", "SUCCESS", "FAILED"]
    assert {a["content_type"] for a in CloudFormation.answers} == {""}
    assert CloudFormation.answers[0]["Data"]["Id"] == job_id
    assert refused["Status"] == "FAILED"
    assert "schedule.cron" in CloudFormation.answers[-1]["Reason"]


def test_an_invoke_of_a_function_the_node_does_not_play_is_lambdas_404(node: Node) -> None:
    client = _lambda(node)
    with pytest.raises(client.exceptions.ResourceNotFoundException, match="Function not found"):
        client.invoke(FunctionName="someone-elses", Payload=b"{}")
