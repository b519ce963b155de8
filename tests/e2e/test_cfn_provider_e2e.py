"""The custom resource provider in the local runtime (`tickwork dev`): invoked as CloudFormation invokes it (Lambda's
Invoke, here of the node's own endpoint), with CloudFormation's events; its answer PUT to the pre-signed URL, here a
local server's; the job it makes seen through the API."""

from __future__ import annotations

import pytest

from tests.conftest import load_event
from tests.e2e.conftest import Node, invoke_provider, lambda_client
from tests.http_upstream import PresignedPuts, serving


def test_a_create_update_and_delete_event_make_change_and_cancel_a_job_in_the_local_runtime(node: Node) -> None:
    PresignedPuts.answers = []
    with serving(PresignedPuts) as url:
        response_url = f"{url}/cfn-response?X-Amz-Signature=0f1e"
        created = invoke_provider(node, {**load_event("cfn-job-create.json"), "ResponseURL": response_url})
        job_id = created["PhysicalResourceId"]
        job = node.api.get(f"/v1/jobs/{job_id}")
        assert (job["name"], job["priority"], job["state"]) == ("nightly-export", 7, "ACTIVE")
        update = {**load_event("cfn-job-update.json"), "ResponseURL": response_url, "PhysicalResourceId": job_id}
        assert invoke_provider(node, update)["PhysicalResourceId"] == job_id
        assert node.api.get(f"/v1/jobs/{job_id}")["schedule"]["cron"] == "30 4 * * *"
        delete = {**load_event("cfn-job-delete.json"), "ResponseURL": response_url, "PhysicalResourceId": job_id}
        invoke_provider(node, delete)
        refused = invoke_provider(node, {**load_event("cfn-job-create-refused.json"), "ResponseURL": response_url})
    assert node.api.get(f"/v1/jobs/{job_id}")["state"] == "CANCELLED"
    assert [a["Status"] for a in PresignedPuts.answers] == ["SUCCESS", "SUCCESS", "SUCCESS", "FAILED"]
    assert {a["content_type"] for a in PresignedPuts.answers} == {""}
    assert PresignedPuts.answers[0]["Data"]["Id"] == job_id
    assert refused["Status"] == "FAILED"
    assert "schedule.cron" in PresignedPuts.answers[-1]["Reason"]


def test_an_invoke_of_a_function_the_node_does_not_play_is_lambdas_404(node: Node) -> None:
    client = lambda_client(node)
    with pytest.raises(client.exceptions.ResourceNotFoundException, match="Function not found"):
        client.invoke(FunctionName="someone-elses", Payload=b"{}")
