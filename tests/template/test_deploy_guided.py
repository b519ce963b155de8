"""What `sam deploy --guided` and a caller need from the template: every parameter takes Enter, the cursor key is
the stack's own secret, and managed policies grant callers and the admin their access to the API."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tickwork_local.stack.template import REPO_ROOT


def _resources_of_type(template, type_):
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def test_guided_deploy_takes_enter_for_every_parameter(template):
    # `sam deploy --guided` prompts a NoEcho parameter with no default (SAM CLI's guided_context), so Enter asks
    # again, forever; and a parameter with no Default cannot be taken with Enter either.
    for name, parameter in template["Parameters"].items():
        assert not parameter.get("NoEcho"), f"{name} is NoEcho: --guided offers no default for it"
        assert "Default" in parameter, f"{name} has no Default"


def test_the_cursor_key_is_a_secret_the_stack_generates_and_resolves_at_deploy(template):
    secret = template["Resources"]["CursorSecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 32
    assert generated["ExcludePunctuation"] is True
    # Resolved by CloudFormation into the environment when the functions are deployed: no Secrets Manager call
    # per request, and no secret in the stack's parameters.
    env = template["Resources"]["ApiFunction"]["Properties"]["Environment"]["Variables"]
    assert env["CURSOR_SECRET"] == {"Fn::Sub": "{{resolve:secretsmanager:${CursorSecret}:SecretString}}"}


def _statements(template, logical_id):
    policy = template["Resources"][logical_id]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    return policy["Properties"]["PolicyDocument"]["Statement"]


API_ROUTES = {"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*"}


def test_the_caller_policy_invokes_this_api_and_nothing_else(template):
    (statement,) = _statements(template, "ApiCallerPolicy")
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == "execute-api:Invoke"
    assert statement["Resource"] == API_ROUTES


def test_the_admin_policy_invokes_this_api_and_reads_the_executor_logs(template):
    invoke, logs = _statements(template, "ApiAdminPolicy")
    assert (invoke["Effect"], invoke["Action"], invoke["Resource"]) == ("Allow", "execute-api:Invoke", API_ROUTES)
    assert logs["Effect"] == "Allow"
    assert set(logs["Action"]) == {"logs:FilterLogEvents", "logs:GetLogEvents", "logs:DescribeLogStreams"}
    assert logs["Resource"] == {"Fn::GetAtt": ["ExecutorLogGroup", "Arn"]}


def test_the_managed_policies_are_the_callers_and_the_executors_vpc_access(template):
    policies = _resources_of_type(template, "AWS::IAM::ManagedPolicy")
    # The API's two callers, the resource provider's (a stack's deployer: docs/jobs-as-code.md), the VPC's.
    callers = {"ApiCallerPolicy", "ApiAdminPolicy", "ResourceProviderCallerPolicy"}
    assert set(policies) == callers | {"ExecutorVpcAccessPolicy"}
    assert template["Resources"]["ExecutorVpcAccessPolicy"]["Condition"] == "InVpc"  # only with VpcSubnetIds


def test_outputs_name_the_caller_policies(template):
    outputs = template["Outputs"]
    assert outputs["ApiCallerPolicyArn"]["Value"] == {"Ref": "ApiCallerPolicy"}
    assert outputs["ApiAdminPolicyArn"]["Value"] == {"Ref": "ApiAdminPolicy"}


# SAM CLI pins its own dependencies, so it lives in a venv of its own (as checkov does); SAM_PYTHON names its Python.
SAM_PYTHON = os.environ.get("SAM_PYTHON") or str(REPO_ROOT / ".venv-sam" / "bin" / "python")
_HAS_SAM = Path(SAM_PYTHON).exists()


def _guided_with_enter(template_path: Path) -> subprocess.CompletedProcess[str]:
    script = Path(__file__).with_name("guided_prompts.py")
    command = [SAM_PYTHON, str(script), str(template_path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(not _HAS_SAM, reason="SAM CLI's venv is not here (SAM_PYTHON)")
def test_sam_clis_own_guided_prompts_take_enter_for_the_template_and_loop_on_a_noecho_parameter(template, tmp_path):
    done = _guided_with_enter(REPO_ROOT / "template.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    defaults = {name: str(parameter["Default"]) for name, parameter in template["Parameters"].items()}
    assert json.loads(done.stdout) == defaults

    control = tmp_path / "noecho.yaml"
    control.write_text("Parameters:\n  Secret:\n    Type: String\n    Default: ''\n    NoEcho: true\nResources: {}\n")
    assert _guided_with_enter(control).returncode == 3  # asked again after Enter: the loop this template avoids
