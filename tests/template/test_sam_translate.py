"""template.yaml transforms offline, with aws-sam-translator, into the CloudFormation we expect."""

from __future__ import annotations

import re

import pytest
from samtranslator.model.exceptions import InvalidDocumentException
from template_support import evaluate, translate

FUNCTIONS = (
    "TickFunction",
    "ExecutorFunction",
    "ApiFunction",
    "DispatchFunction",
    "JobSandboxFunction",
    "ResourceProviderFunction",
)


def _of_type(translated, type_):
    return {k: r for k, r in translated["Resources"].items() if r["Type"] == type_}


def test_translates_to_plain_cloudformation(translated):
    assert "Transform" not in translated
    types = {r["Type"] for r in translated["Resources"].values()}
    assert not {t for t in types if t.startswith("AWS::Serverless::")}
    assert set(_of_type(translated, "AWS::Lambda::Function")) == set(FUNCTIONS)
    assert len(_of_type(translated, "AWS::Lambda::LayerVersion")) == 1
    assert set(_of_type(translated, "AWS::Lambda::EventSourceMapping")) == {
        "ExecutorFunctionHighBand",
        "ExecutorFunctionNormalBand",
        "ExecutorFunctionLowBand",
        "DispatchFunctionSlices",
    }
    assert set(_of_type(translated, "AWS::Events::Rule")) == {"TickFunctionEveryMinute"}
    assert "AWS::ApiGatewayV2::Api" in types
    assert "AWS::ApiGatewayV2::Stage" in types


def test_functions_use_our_roles_and_the_layer(translated):
    layer_id = next(iter(_of_type(translated, "AWS::Lambda::LayerVersion")))
    roles = {
        "TickFunction": "TickRole",
        "ExecutorFunction": "ExecutorRole",
        "ApiFunction": "ApiRole",
        "DispatchFunction": "DispatchRole",
        "JobSandboxFunction": "JobSandboxRole",
        "ResourceProviderFunction": "ResourceProviderRole",
    }
    for name in FUNCTIONS:
        props = translated["Resources"][name]["Properties"]
        assert props["Role"] == {"Fn::GetAtt": [roles[name], "Arn"]}
        assert evaluate(translated, props["Layers"]) == [{"Ref": layer_id}]  # ExtraLayerArns empty: no more
        assert props["Runtime"] == "python3.13"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}


LAYER = "arn:aws:lambda:eu-west-1:111122223333:layer:acme-jobs:{}"


@pytest.mark.parametrize("extra", [[LAYER.format(1)], [LAYER.format(n) for n in range(1, 5)]])
def test_extra_layers_follow_the_tickwork_layer_in_every_function(translated, extra):
    layer_id = next(iter(_of_type(translated, "AWS::Lambda::LayerVersion")))
    for name in FUNCTIONS:
        layers = translated["Resources"][name]["Properties"]["Layers"]
        assert evaluate(translated, layers, {"ExtraLayerArns": ",".join(extra)}) == [{"Ref": layer_id}, *extra]


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("", True),
        (",".join(LAYER.format(n) for n in range(1, 5)), True),
        (",".join(LAYER.format(n) for n in range(1, 6)), False),  # a sixth layer: Lambda allows five
        (f"{LAYER.format(1)}, {LAYER.format(2)}", False),  # a space would be part of the second ARN
        ("arn:aws:lambda:eu-west-1:111122223333:function:acme", False),  # a function, not a layer version
    ],
)
def test_extra_layer_arns_are_checked_at_deploy(template, value, accepted):
    parameter = template["Parameters"]["ExtraLayerArns"]
    assert (re.fullmatch(parameter["AllowedPattern"], value) is not None) is accepted


def test_sam_generates_no_function_roles_and_no_managed_policies(template, translated):
    """SAM's generated roles would carry AWS-managed policies with Resource "*"; we have none."""
    roles = _of_type(translated, "AWS::IAM::Role")
    # Ours, plus nothing: the rule invokes through a Lambda permission, not a role.
    assert set(roles) == {
        "TickRole",
        "ExecutorRole",
        "ApiRole",
        "DispatchRole",
        "JobSandboxRole",
        "ResourceProviderRole",
    }
    for logical_id, role in roles.items():
        # The template's own, as it wrote them (the executor's VPC access, only in a VPC): SAM added none.
        written = template["Resources"][logical_id]["Properties"].get("ManagedPolicyArns")
        assert role["Properties"].get("ManagedPolicyArns") == written


def test_tick_rule_retries_and_dead_letters(template, translated):
    rule = translated["Resources"]["TickFunctionEveryMinute"]["Properties"]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert evaluate(template, rule["State"]) == "ENABLED"  # a passive region's is not (test_regions.py)
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["TickFunction", "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["TickDeadLetterQueue", "Arn"]}}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    permission = translated["Resources"]["TickFunctionEveryMinutePermission"]["Properties"]
    assert permission["Principal"] == "events.amazonaws.com"


def test_tick_async_failures_go_to_the_tick_dlq(translated):
    config = _of_type(translated, "AWS::Lambda::EventInvokeConfig")
    (props,) = (r["Properties"] for r in config.values())
    assert props["FunctionName"] == {"Ref": "TickFunction"}
    assert props["MaximumRetryAttempts"] == 0
    assert props["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["TickDeadLetterQueue", "Arn"]}


def test_http_api_is_iam_authenticated_with_access_logs(translated):
    api = _of_type(translated, "AWS::ApiGatewayV2::Api")
    # The token API (test_token_api.py) is plain CloudFormation, with no Body, and only under its condition.
    (body,) = (r["Properties"]["Body"] for r in api.values() if "Condition" not in r)
    schemes = body["components"]["securitySchemes"]
    assert schemes["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    assert set(body["paths"]) == {"$default"}  # every path reaches ApiFunction, IAM-authenticated
    for methods in body["paths"].values():
        for method in methods.values():
            assert method["security"] == [{"AWS_IAM": []}]
            assert "ApiFunction.Arn" in method["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
    (stage,) = (
        r["Properties"] for r in _of_type(translated, "AWS::ApiGatewayV2::Stage").values() if "Condition" not in r
    )
    assert stage["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}


def test_every_parameter_set_translates(template, monkeypatch):
    """Non-default parameter values (email on, custom ARNs, protection off) translate too."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    translated = translate(
        template,
        {
            "AlarmEmail": "ops@example.com",
            "InvokableFunctionArns": "arn:aws:lambda:eu-west-1:111122223333:function:report-*",
            "TableDeletionProtection": "false",
            "JobTypeModules": "acme_jobs",
            "ExtraLayerArns": LAYER.format(3),
        },
    )
    assert "AlarmEmailSubscription" in translated["Resources"]


def test_translator_rejects_an_unknown_event_property(template, monkeypatch):
    """The translation check has teeth: what cfn-lint misses on SQS events, the translator catches."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    broken = {**template, "Resources": dict(template["Resources"])}
    executor = broken["Resources"]["ExecutorFunction"]
    events = dict(executor["Properties"]["Events"])
    events["HighBand"] = {"Type": "SQS", "Properties": {**events["HighBand"]["Properties"], "BatchSizee": 10}}
    broken["Resources"]["ExecutorFunction"] = {**executor, "Properties": {**executor["Properties"], "Events": events}}
    with pytest.raises(InvalidDocumentException):
        translate(broken)
