"""Least privilege must not mean "too little": every AWS call the real code makes is allowed by the
role of the function that makes it, on the resource it touches.

The pipeline harness records every botocore call (nothing is faked); each phase is attributed to the
function that runs it in AWS: the API's job service to ApiRole, the tick handler to TickRole, and
the executor handler plus its SQS event source mapping (receive, delete) to ExecutorRole.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from template_support import as_list, iam_statements
from tickwork.models import RunStatus

from tests.harness import START, TENANT

FAR = timedelta(minutes=10)

# Calls authorised by another action's name (IAM has no action of the call's own name).
_ACTION_OF = {
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
}
_TRANSACT_ACTION = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _queue_ids(resources) -> dict[str, str]:
    ids = {url: f"{band.capitalize()}Queue" for band, url in resources.queue_urls.items()}
    ids |= {url: f"{band.capitalize()}DeadLetterQueue" for band, url in resources.dlq_urls.items()}
    ids |= {url: logical_id for logical_id, url in resources.extra_queue_urls.items()}
    return ids


def _needed(service: str, operation: str, params: dict[str, Any], resources) -> list[tuple[str, tuple[str, str]]]:
    """(IAM action, (logical id, sub-resource)) pairs one recorded call needs."""
    if service == "dynamodb":
        assert params.get("TableName", resources.table_name) == resources.table_name
        if operation == "TransactWriteItems":
            needed = []
            for item in params["TransactItems"]:
                ((kind, body),) = item.items()
                assert body["TableName"] == resources.table_name
                needed.append((_TRANSACT_ACTION[kind], ("JobsTable", "")))
            return needed
        index = params.get("IndexName")
        return [(f"dynamodb:{operation}", ("JobsTable", f"/index/{index}" if index else ""))]
    if service == "sqs":
        return [
            (_ACTION_OF.get((service, operation), f"sqs:{operation}"), (_queue_ids(resources)[params["QueueUrl"]], ""))
        ]
    if service == "s3":
        assert params["Bucket"] == resources.results_bucket
        target = ("ResultsBucket", "/*") if "Key" in params else ("ResultsBucket", "")
        return [(_ACTION_OF.get((service, operation), f"s3:{operation}"), target)]
    raise AssertionError(f"unexpected service {service}")


def _granted(template, role: str) -> set[tuple[str, tuple[str, str]]]:
    """(action, (logical id, sub-resource)) pairs a role's Allow statements name."""
    grants = set()
    for r, statement in iam_statements(template):
        if r != role or statement["Effect"] != "Allow":
            continue
        for resource in as_list(statement["Resource"]):
            if isinstance(resource, dict) and "Fn::GetAtt" in resource:
                target = (resource["Fn::GetAtt"][0], "")
            elif isinstance(resource, dict) and "Fn::Sub" in resource:
                match = re.fullmatch(r"\$\{(\w+)\.Arn\}(.*)", resource["Fn::Sub"])
                target = (match.group(1), match.group(2)) if match else ("?", resource["Fn::Sub"])
            else:
                target = ("?", str(resource))
            for action in as_list(statement["Action"]):
                grants.add((action, target))
    return grants


def test_every_call_the_code_makes_is_allowed_by_its_functions_role(pipeline, template):
    recorded: dict[str, list[tuple[str, str, dict[str, Any]]]] = defaultdict(list)

    @contextmanager
    def acting_as(role: str) -> Iterator[None]:
        pipeline.calls.clear()
        yield
        recorded[role].extend(pipeline.calls.calls)
        pipeline.calls.clear()

    jobs, queries, redrive = pipeline.services.jobs, pipeline.services.queries, pipeline.services.redrive
    with acting_as("ApiRole"):
        ok = pipeline.create_job(schedule={"at": START + FAR})
        failing = pipeline.create_job(
            schedule={"at": START + FAR},
            payload={"fail_attempts": 10},
            retry={"max_attempts": 2, "backoff_seconds": 1},
        )
        pipeline.create_job(schedule={"at": START + timedelta(seconds=5)})  # claimed and sent at create
        queries.get_job(TENANT, ok.id)

    pipeline.clock.advance(FAR.total_seconds())
    with acting_as("TickRole"):
        assert pipeline.tick()["dispatched"] >= 2
    with acting_as("ExecutorRole"):
        pipeline.drain()  # succeeds, retries (ChangeMessageVisibility), exhausts -> DLQ

    (failed,) = pipeline.runs_of(failing.id)
    assert failed.status is RunStatus.FAILED
    with acting_as("ApiRole"):
        queries.get_run(TENANT, failed.id)
        redrive.retry_run(TENANT, failed.id)
        jobs.trigger(TENANT, ok.id)

    operations = {op for calls in recorded.values() for _, op, _ in calls}
    # The phases really exercised the paths that need distinct permissions.
    assert {"PutItem", "UpdateItem", "SendMessageBatch", "Query", "PutObject", "ChangeMessageVisibility"} <= operations
    assert any(op == "SendMessage" and "DeadLetterQueue" in p["QueueUrl"] for _, op, p in recorded["ExecutorRole"]), (
        "the exhausted run was not dead-lettered"
    )

    missing = []
    for role, calls in recorded.items():
        granted = _granted(template, role)
        for service, operation, params in calls:
            for need in _needed(service, operation, params, pipeline.resources):
                if need not in granted:
                    missing.append((role, operation, *need))
    assert sorted(set(missing)) == []
