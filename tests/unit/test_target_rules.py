"""The lambda job type's check of a function against InvokableFunctionArns, as IAM matches a resource pattern."""

from __future__ import annotations

import pytest
from tickwork.jobtypes.lambda_invoke import LambdaPayload, invocation_refusal
from tickwork.model.targets import DEFAULT_TARGETS, TargetRules

PREFIX = "arn:aws:lambda:us-east-1:123456789012:function:"
RULES = TargetRules(invokable_functions=(f"{PREFIX}team-?-*", f"{PREFIX}exact"), function_arn_prefix=PREFIX)


@pytest.mark.parametrize("function", ["team-a-sync", "team-b-x:live", f"{PREFIX}exact", "exact"])
def test_functions_the_patterns_hold(function):
    assert invocation_refusal(function, RULES) is None


@pytest.mark.parametrize(
    "function",
    [
        "team-ab-sync",  # `?` is one character
        "exact2",  # a pattern without `*` is exact
        "exact:live",  # a qualified ARN is another resource to IAM
        "arn:aws:lambda:us-east-1:123456789012:function:teamXa-sync",  # the rest of a pattern is literal
    ],
)
def test_functions_the_patterns_do_not_hold(function):
    assert invocation_refusal(function, RULES) is not None


def test_a_pattern_s_regex_characters_are_literal():
    rules = TargetRules(invokable_functions=(f"{PREFIX}a.b",), function_arn_prefix=PREFIX)
    assert invocation_refusal("a.b", rules) is None
    assert invocation_refusal("aXb", rules) is not None


def test_without_function_patterns_nothing_is_checked():
    assert invocation_refusal("anything", DEFAULT_TARGETS) is None
    assert LambdaPayload.model_validate({"function_arn": "anything"}).function_arn == "anything"


def test_the_payload_model_reads_the_rules_from_its_context():
    with pytest.raises(ValueError, match="InvokableFunctionArns"):
        LambdaPayload.model_validate({"function_arn": "other"}, context=RULES.context())
