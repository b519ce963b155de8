"""The jobs table's billing mode (docs/scale.md): on demand by default, with nothing to scale; PROVISIONED with
Application Auto Scaling tracking the table's and each index's reads and writes between the parameters' bounds.

The template is read as CloudFormation deploys it with the parameters given (template_support.evaluate); cfn-lint,
checkov and `sam validate` check the same `provisioned` rendering (tickwork_local.stack.template_renderings).
"""

from __future__ import annotations

from typing import Any

from template_support import resources_on
from tickwork_local.stack.template_renderings import PROVISIONED_PARAMETERS

TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
POLICY = "AWS::ApplicationAutoScaling::ScalingPolicy"


def _of_type(resources: dict[str, dict[str, Any]], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in resources.items() if r["Type"] == type_}


def _scaled(template: dict[str, Any]) -> set[tuple[str, str]]:
    """(the table or an index, the dimension) of every scalable target the provisioned stack holds."""
    targets = _of_type(resources_on(template, PROVISIONED_PARAMETERS), TARGET)
    return {(t["ResourceId"], t["ScalableDimension"]) for t in targets.values()}


def _index_names(table: dict[str, Any]) -> list[str]:
    return [index["IndexName"] for index in table["Properties"]["GlobalSecondaryIndexes"]]


def test_the_default_table_is_on_demand_with_nothing_to_scale(template):
    resources = resources_on(template, {})
    table = resources["JobsTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in table
    assert all("ProvisionedThroughput" not in index for index in table["GlobalSecondaryIndexes"])
    assert not _of_type(resources, TARGET)
    assert not _of_type(resources, POLICY)


def test_a_provisioned_table_and_each_index_have_capacity_to_start_from(template):
    table = resources_on(template, PROVISIONED_PARAMETERS)["JobsTable"]["Properties"]
    assert table["BillingMode"] == "PROVISIONED"
    start = {"ReadCapacityUnits": "5", "WriteCapacityUnits": "5"}  # the Min parameters' defaults
    assert table["ProvisionedThroughput"] == start
    assert [index["ProvisionedThroughput"] for index in table["GlobalSecondaryIndexes"]] == [start] * 3


def test_a_provisioned_table_scales_its_reads_and_writes_and_each_indexs(template):
    table = resources_on(template, PROVISIONED_PARAMETERS)["JobsTable"]
    expected = {("table/${JobsTable}", f"dynamodb:table:{kind}CapacityUnits") for kind in ("Read", "Write")} | {
        (f"table/${{JobsTable}}/index/{name}", f"dynamodb:index:{kind}CapacityUnits")
        for name in _index_names(table)
        for kind in ("Read", "Write")
    }
    assert _scaled(template) == expected
    assert len(expected) == 8  # the table and its three indexes, reads and writes


def test_each_scalable_target_has_a_target_tracking_policy_within_the_bounds(template):
    given = {**PROVISIONED_PARAMETERS, "TableWriteCapacityMax": "900", "TableTargetUtilization": "55"}
    resources = resources_on(template, given)
    targets = _of_type(resources, TARGET)
    policies = _of_type(resources, POLICY)
    assert sorted(p["ScalingTargetId"]["Ref"] for p in policies.values()) == sorted(targets)
    for policy in policies.values():
        target = targets[policy["ScalingTargetId"]["Ref"]]
        kind = "Read" if target["ScalableDimension"].endswith("ReadCapacityUnits") else "Write"
        assert policy["PolicyType"] == "TargetTrackingScaling"
        config = policy["TargetTrackingScalingPolicyConfiguration"]
        assert config["TargetValue"] == "55"
        assert config["PredefinedMetricSpecification"] == {"PredefinedMetricType": f"DynamoDB{kind}CapacityUtilization"}
        assert (target["MinCapacity"], target["MaxCapacity"]) == (("5", "4000") if kind == "Read" else ("5", "900"))
