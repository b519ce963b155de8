"""Every AWS call the API makes, through every route, is allowed by ApiRole in template.yaml (least privilege
must not mean "too little": a missing grant would be a 500 in AWS that moto never shows)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tickwork_local.stack.template import load_template

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

_ACTION_OF = {("sqs", "SendMessageBatch"): "sqs:SendMessage", ("s3", "HeadObject"): "s3:GetObject"}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _api_grants() -> set[tuple[str, str]]:
    """(action, target) pairs ApiRole allows; target is `<logical id><sub-resource>`."""
    role = load_template()["Resources"]["ApiRole"]["Properties"]
    grants = set()
    for policy in role["Policies"]:
        for granted in policy["PolicyDocument"]["Statement"]:
            # A statement granted under a region mode's condition: as the one-region stack has it (none, for the
            # other regions' results and region-role items: tests/template/test_regions.py).
            statement = granted
            if "Fn::If" in granted:
                condition, when, otherwise = granted["Fn::If"]
                assert condition in ("SingleRegion", "StrongRegions", "EventualRegions"), condition
                statement = when if condition == "SingleRegion" else otherwise
            if statement == {"Ref": "AWS::NoValue"} or statement["Effect"] != "Allow":
                continue
            for named in _as_list(statement["Resource"]):
                # The one-region stack's of an `!If [SingleRegion, ...]` (the global table's: tests/template).
                one_region = isinstance(named, dict) and "Fn::If" in named and named["Fn::If"][0] == "SingleRegion"
                resource = named["Fn::If"][1] if one_region else named
                if isinstance(resource, dict) and "Fn::GetAtt" in resource:
                    target = resource["Fn::GetAtt"][0]
                elif isinstance(resource, dict) and "Fn::Sub" in resource:
                    match = re.fullmatch(r"\$\{(\w+)\.Arn\}(.*)", resource["Fn::Sub"])
                    target = "".join(match.groups()) if match else resource["Fn::Sub"]
                else:
                    target = str(resource)
                for action in _as_list(statement["Action"]):
                    grants.add((action, target))
    return grants


def _needed(service: str, operation: str, params: dict[str, Any], resources: Any) -> set[tuple[str, str]]:
    if service == "dynamodb":
        # BatchGetItem names its table in RequestItems; TransactWriteItems in each of its TransactItems, and IAM
        # authorises each of those by its own action (PutItem, UpdateItem, ...): there is no TransactWriteItems one.
        items = [next(iter(i.items())) for i in params.get("TransactItems", [])]
        tables = {params.get("TableName"), *params.get("RequestItems", {}), *(i["TableName"] for _, i in items)}
        assert tables - {None} == {resources.table_name}
        if items:
            return {(f"dynamodb:{kind}Item", "JobsTable") for kind, _ in items}  # ConditionCheck too
        index = params.get("IndexName")
        return {(f"dynamodb:{operation}", "JobsTable" + (f"/index/{index}" if index else ""))}
    if service == "iam":  # the caller's role's tenant tag, any role of the API's account
        assert operation == "ListRoleTags"
        return {("iam:ListRoleTags", "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/*")}
    if service == "sqs":
        band = next(b for b, url in resources.queue_urls.items() if url == params["QueueUrl"])
        return {(_ACTION_OF.get((service, operation), f"sqs:{operation}"), f"{band.capitalize()}Queue")}
    assert service == "s3"
    assert params["Bucket"] == resources.results_bucket
    target = "ResultsBucket/*" if "Key" in params else "ResultsBucket"
    return {(_ACTION_OF.get((service, operation), f"s3:{operation}"), target)}


def test_every_call_of_every_route_is_granted_to_api_role(api, pipeline):
    recorded: list[tuple[str, str, dict[str, Any]]] = []

    def as_api(call):
        pipeline.calls.clear()
        reply = call()
        recorded.extend(pipeline.calls.calls)
        return reply

    body = {"name": "n", "type": "echo", "payload": {"fail_attempts": 9}, "schedule": {"rate": "1 minute"}}
    body["retry"] = {"max_attempts": 1}
    job = as_api(lambda: api.post("/v1/jobs", body, headers={"Idempotency-Key": "iam-1"})).json
    as_api(lambda: api.post("/v1/jobs", body, headers={"Idempotency-Key": "iam-1"}))
    as_api(lambda: api.get("/v1/jobs", query={"limit": 1, "state": "ACTIVE"}))
    as_api(lambda: api.get(f"/v1/jobs/{job['id']}"))
    as_api(lambda: api.patch(f"/v1/jobs/{job['id']}", {"priority": 9, "schedule": {"rate": "30 seconds"}}))
    as_api(lambda: api.post(f"/v1/jobs/{job['id']}/pause"))
    as_api(lambda: api.post(f"/v1/jobs/{job['id']}/resume"))
    run = as_api(lambda: api.post(f"/v1/jobs/{job['id']}/trigger")).json
    assert as_api(lambda: api.get(f"/v1/runs/{run['id']}/result")).status == 404  # S3 answers 404, not 403
    pipeline.drain()
    as_api(lambda: api.get(f"/v1/jobs/{job['id']}/runs", query={"status": "FAILED"}))
    as_api(lambda: api.get(f"/v1/runs/{run['id']}"))
    as_api(lambda: api.get("/v1/dlq"))
    as_api(lambda: api.get("/v1/runs/stuck"))
    assert as_api(lambda: api.post(f"/v1/runs/{run['id']}/retry")).status == 202
    pipeline.drain()
    assert as_api(lambda: api.post("/v1/dlq/redrive", {"all": True})).json["redriven"] >= 1
    pipeline.drain()
    assert as_api(lambda: api.post("/v1/dlq/redrive", {"run_ids": [run["id"]]})).json["redriven"] == 1
    as_api(lambda: api.delete(f"/v1/jobs/{job['id']}"))
    ok = as_api(lambda: api.post("/v1/jobs", {**body, "payload": {}})).json
    done = as_api(lambda: api.post(f"/v1/jobs/{ok['id']}/trigger")).json
    pipeline.drain()
    assert as_api(lambda: api.get(f"/v1/runs/{done['id']}/result")).status == 200

    operations = {op for _, op, _ in recorded}
    assert {"GetItem", "PutItem", "UpdateItem", "Query", "SendMessageBatch", "GetObject"} <= operations
    assert "Scan" not in operations
    granted = _api_grants()
    missing = set().union(*(_needed(s, op, p, pipeline.resources) for s, op, p in recorded)) - granted
    assert missing == set()
