"""The job sandbox's role, as the template renders it (docs/security.md, "Isolation of job code"): a function-isolated
handler runs under JobSandboxRole, which grants its logs and traces and nothing of Tickwork's: it cannot write the
table, send to or read the queues, read any tenant's results, checkpoints or logs, read a secret, or invoke another
function. Checked on the policy documents of each rendering CI deploys (no VPC, a VPC, the token API), SAM-translated
too, by IAM's own matching of action patterns: no granted action matches a forbidden one on any resource.

(moto's IAM does not evaluate policies for its other services' calls, so the documents are the evidence.)"""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest
from template_support import _references, as_list, iam_statements, resources_on
from tickwork_local.stack.template_renderings import RENDERINGS

# What the sandbox must not do to Tickwork's data, whatever the resource (so whichever tenant's it is).
FORBIDDEN = [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:TransactWriteItems",
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:ListBucket",
    "secretsmanager:GetSecretValue",
    "ssm:GetParameter",
    "kms:Decrypt",
    "lambda:InvokeFunction",
    "events:PutEvents",
    "sts:AssumeRole",
    "iam:PassRole",
]
GRANTED = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def _allows(pattern: str, action: str) -> bool:
    """IAM's action matching: case-insensitive, `*` and `?` wildcards."""
    return fnmatch.fnmatchcase(action.lower(), pattern.lower())


def _sandbox_actions(resources: dict[str, Any]) -> set[str]:
    """Every action JobSandboxRole's inline and managed policies allow (on any resource)."""
    role = resources["JobSandboxRole"]["Properties"]
    documents = [policy["PolicyDocument"] for policy in role.get("Policies", [])]
    for arn in role.get("ManagedPolicyArns", []):
        assert set(arn) == {"Ref"}, f"an AWS managed policy on the sandbox's role: {arn}"
        documents.append(resources[arn["Ref"]]["Properties"]["PolicyDocument"])
    return {
        action
        for document in documents
        for statement in as_list(document["Statement"])
        if statement["Effect"] == "Allow"
        for action in as_list(statement["Action"])
    }


@pytest.mark.parametrize("rendering", ["default", *RENDERINGS])
def test_the_sandbox_role_grants_nothing_of_the_table_queues_results_or_secrets(template, rendering):
    resources = resources_on(template, RENDERINGS.get(rendering, {}))
    actions = _sandbox_actions(resources)
    allowed = {(pattern, action) for pattern in actions for action in FORBIDDEN if _allows(pattern, action)}
    assert allowed == set()
    expected = GRANTED | ({a for a in actions if a.startswith("ec2:")} if rendering == "vpc" else set())
    assert actions == expected
    assert not {a for a in actions if a.startswith("ec2:")} or rendering == "vpc"
    assert resources["JobSandboxFunction"]["Properties"]["Role"] == {"Fn::GetAtt": ["JobSandboxRole", "Arn"]}


def test_the_sandbox_writes_only_its_own_log_group(template):
    (logs,) = [s for r, s in iam_statements(template) if r == "JobSandboxRole" and s["Sid"] == "Logs"]
    assert logs["Resource"] == {"Fn::GetAtt": ["JobSandboxLogGroup", "Arn"]}
    function = template["Resources"]["JobSandboxFunction"]["Properties"]
    assert function["LoggingConfig"] == {"LogGroup": {"Ref": "JobSandboxLogGroup"}}


def test_no_resource_policy_grants_the_sandbox_anything(template):
    """Besides its function, only the executor names the sandbox (to invoke it); no bucket, queue, key or secret
    policy names its role."""
    naming_role = {k for k, r in template["Resources"].items() if "JobSandboxRole" in _references(r)}
    assert naming_role == {"JobSandboxFunction"}
    naming_function = {k for k, r in template["Resources"].items() if "JobSandboxFunction" in _references(r)}
    assert naming_function == {"ExecutorRole", "ExecutorFunction"}


def test_as_sam_translates_it_the_sandbox_function_runs_under_its_own_role(translated):
    function = translated["Resources"]["JobSandboxFunction"]["Properties"]
    assert function["Role"] == {"Fn::GetAtt": ["JobSandboxRole", "Arn"]}
    statements = [s for r, s in iam_statements(translated) if r == "JobSandboxRole"]
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert actions == GRANTED
    # SAM added no role or policy of its own for the function.
    assert "JobSandboxFunctionRole" not in translated["Resources"]
