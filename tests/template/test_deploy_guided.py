"""What `sam deploy --guided` and a caller need from the template: every parameter takes Enter, the cursor key is
the stack's own secret, and managed policies grant callers and the admin their access to the API."""

from __future__ import annotations


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
    env = template["Globals"]["Function"]["Environment"]["Variables"]
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


def test_only_the_two_caller_policies_are_managed_policies(template):
    assert set(_resources_of_type(template, "AWS::IAM::ManagedPolicy")) == {"ApiCallerPolicy", "ApiAdminPolicy"}


def test_outputs_name_the_caller_policies(template):
    outputs = template["Outputs"]
    assert outputs["ApiCallerPolicyArn"]["Value"] == {"Ref": "ApiCallerPolicy"}
    assert outputs["ApiAdminPolicyArn"]["Value"] == {"Ref": "ApiAdminPolicy"}
