"""RegionMode (docs/regions.md): single is the stack as it always was; strong and eventual make the jobs table a
DynamoDB global table, created by the stack in its first region and used by name in every region's stack.

The template is read as CloudFormation deploys it with the parameters given (template_support.evaluate); cfn-lint
and checkov check the strong and eventual renderings (tickwork_local.stack.template_renderings).
"""

from __future__ import annotations

from typing import Any

import pytest
from template_support import evaluate, iam_statements, resources_on, translate
from tickwork_local.stack.template_renderings import EVENTUAL_PARAMETERS, STRONG_PARAMETERS

FUNCTIONS = ("TickFunction", "ExecutorFunction", "ApiFunction", "DispatchFunction")
GLOBAL_ARN = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/tickwork-jobs"


def _in(region: str, parameters: dict[str, str]) -> dict[str, str]:
    return {**parameters, "AWS::Region": region}


def _table_names(resources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {name: resources[name]["Properties"]["Environment"]["Variables"]["TABLE_NAME"] for name in FUNCTIONS}


def _dynamodb_statements(template: dict[str, Any], parameters: dict[str, str]) -> list[dict[str, Any]]:
    deployed = [evaluate(template, statement, parameters) for _, statement in iam_statements(template, as_written=True)]
    return [
        statement
        for statement in deployed
        if isinstance(statement, dict) and "Action" in statement  # not a statement its condition leaves out
        if any(str(action).startswith("dynamodb:") for action in _actions(statement))
    ]


def _dynamodb_resources(template: dict[str, Any], parameters: dict[str, str]) -> list[Any]:
    """This region's: every statement's but the failover probe's, which reads every replica (below)."""
    return [s["Resource"] for s in _dynamodb_statements(template, parameters) if s.get("Sid") != EVERY_REPLICA]


def _actions(statement: dict[str, Any]) -> list[Any]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _tick_schedule_state(template: dict[str, Any], parameters: dict[str, str]) -> Any:
    event = template["Resources"]["TickFunction"]["Properties"]["Events"]["EveryMinute"]["Properties"]
    return evaluate(template, event["State"], parameters)


def test_single_region_is_the_stack_as_it_was(template):
    resources = resources_on(template, _in("us-east-1", {}))
    assert "JobsTable" in resources
    assert "JobsGlobalTable" not in resources
    assert resources["JobsTable"]["Properties"]["TimeToLiveSpecification"] == {
        "AttributeName": "expires_at",
        "Enabled": True,
    }
    assert set(map(str, _table_names(resources).values())) == {str({"Ref": "JobsTable"})}
    for resource in _dynamodb_resources(template, {}):
        assert resource == {"Fn::GetAtt": ["JobsTable", "Arn"]} or resource.startswith("${JobsTable.Arn}/index/")
    assert _tick_schedule_state(template, {}) == "ENABLED"
    assert evaluate(template, template["Outputs"]["TableName"]["Value"]) == {"Ref": "JobsTable"}


def test_strong_is_an_mrsc_global_table_of_two_replicas_and_a_witness(template):
    resources = resources_on(template, _in("us-east-1", STRONG_PARAMETERS))
    assert "JobsTable" not in resources
    table = resources["JobsGlobalTable"]["Properties"]
    assert table["MultiRegionConsistency"] == "STRONG"
    assert table["TableName"] == "tickwork-jobs"
    assert [replica["Region"] for replica in table["Replicas"]] == ["us-east-1", "us-east-2"]
    assert table["GlobalTableWitnesses"] == [{"Region": "us-west-2"}]
    # MRSC has no TTL and needs no stream (docs/regions.md, section 1).
    assert "TimeToLiveSpecification" not in table
    assert "StreamSpecification" not in table
    assert set(_table_names(resources).values()) == {"tickwork-jobs"}


def test_eventual_is_an_mrec_global_table_with_streams_and_ttl(template):
    resources = resources_on(template, _in("us-east-1", EVENTUAL_PARAMETERS))
    table = resources["JobsGlobalTable"]["Properties"]
    assert table["MultiRegionConsistency"] == "EVENTUAL"
    assert [replica["Region"] for replica in table["Replicas"]] == ["us-east-1", "us-east-2", "us-west-2"]
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert "GlobalTableWitnesses" not in table
    for replica in table["Replicas"]:
        assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert replica["DeletionProtectionEnabled"] is True


@pytest.mark.parametrize("parameters", [STRONG_PARAMETERS, EVENTUAL_PARAMETERS], ids=["strong", "eventual"])
def test_the_global_table_holds_what_the_jobs_table_holds(template, parameters):
    single = resources_on(template, _in("us-east-1", {}))["JobsTable"]["Properties"]
    table = resources_on(template, _in("us-east-1", parameters))["JobsGlobalTable"]["Properties"]
    assert table["KeySchema"] == single["KeySchema"]
    # strong's expiry index (no TTL) adds its two keys; nothing else differs.
    expiry = [
        {"AttributeName": "expiry_bucket", "AttributeType": "S"},
        {"AttributeName": "expires_at", "AttributeType": "N"},
    ]
    strong = parameters["RegionMode"] == "strong"
    assert table["AttributeDefinitions"] == single["AttributeDefinitions"] + (expiry if strong else [])
    indexes = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    singles = {index["IndexName"]: index for index in single["GlobalSecondaryIndexes"]}
    assert indexes.keys() - {"expiry-index"} == singles.keys()
    assert ("expiry-index" in indexes) is strong
    assert indexes["tenant-index"] == singles["tenant-index"]
    assert indexes["runs-index"] == singles["runs-index"]
    # A global table's index names at most 20 attributes; the due index's entries are whole there.
    assert indexes["due-index"]["KeySchema"] == singles["due-index"]["KeySchema"]
    assert indexes["due-index"]["Projection"] == {"ProjectionType": "ALL"}


def test_strong_expires_items_through_a_sparse_expiry_index_the_tick_alone_sweeps(template):
    """MRSC has no TTL: the items that expire carry an expiry bucket (tickwork.model.expiry), the key of a sparse,
    keys-only index; the tick queries it and deletes what has expired. Neither the index nor the grants exist in
    single or eventual, where TTL deletes: no index write there."""
    table = resources_on(template, _in("us-east-1", STRONG_PARAMETERS))["JobsGlobalTable"]["Properties"]
    [index] = [index for index in table["GlobalSecondaryIndexes"] if index["IndexName"] == "expiry-index"]
    assert index == {
        "IndexName": "expiry-index",
        "KeySchema": [
            {"AttributeName": "expiry_bucket", "KeyType": "HASH"},
            {"AttributeName": "expires_at", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }
    grants = _grants_by_role(template, STRONG_PARAMETERS)
    assert ("dynamodb:Query", f"{GLOBAL_ARN}/index/expiry-index") in grants["TickRole"]
    assert ("dynamodb:DeleteItem", GLOBAL_ARN) in grants["TickRole"]
    for role, granted in grants.items():
        if role != "TickRole":
            assert not any(str(resource).endswith("/index/expiry-index") for _, resource in granted), role
    for parameters in ({}, EVENTUAL_PARAMETERS):
        for role, granted in _grants_by_role(template, parameters).items():
            assert not any(str(resource).endswith("/index/expiry-index") for _, resource in granted), role
        assert ("dynamodb:DeleteItem", GLOBAL_ARN) not in _grants_by_role(template, parameters)["TickRole"]
    assert ("dynamodb:DeleteItem", {"Fn::GetAtt": ["JobsTable", "Arn"]}) not in _grants_by_role(template, {})[
        "TickRole"
    ]


def _grants_by_role(template: dict[str, Any], parameters: dict[str, str]) -> dict[str, list[tuple[str, Any]]]:
    """(action, resource) pairs of each role's statements as deployed with these parameters."""
    grants: dict[str, list[tuple[str, Any]]] = {}
    for role, statement in iam_statements(template, as_written=True):
        deployed = evaluate(template, statement, parameters)
        if not isinstance(deployed, dict) or "Action" not in deployed:
            continue  # a statement its condition leaves out
        resources = deployed["Resource"] if isinstance(deployed["Resource"], list) else [deployed["Resource"]]
        grants.setdefault(role, []).extend((a, r) for a in _actions(deployed) for r in resources)
    return grants


@pytest.mark.parametrize("parameters", [STRONG_PARAMETERS, EVENTUAL_PARAMETERS], ids=["strong", "eventual"])
def test_only_the_first_region_creates_the_table_and_every_region_uses_it_by_name(template, parameters):
    elsewhere = resources_on(template, _in("us-east-2", parameters))
    assert "JobsGlobalTable" not in elsewhere
    assert "JobsTable" not in elsewhere
    assert set(_table_names(elsewhere).values()) == {"tickwork-jobs"}
    for resource in _dynamodb_resources(template, parameters):
        assert resource == GLOBAL_ARN or resource.startswith(f"{GLOBAL_ARN}/index/"), resource


EVERY_REPLICA = "ReadRegionRolesInEveryReplica"


@pytest.mark.parametrize("regions", ["us-east-1,us-east-2,us-west-2", "us-east-1,us-west-2"])
def test_in_eventual_the_api_may_read_the_region_role_item_in_every_replica_and_nothing_else_there(template, regions):
    """A failover's replication probe (tickwork.control.replication_probe) reads the old active region's replica."""
    parameters = {**EVENTUAL_PARAMETERS, "GlobalTableRegions": regions}
    (statement,) = [
        s for s in _dynamodb_statements(template, _in("us-east-2", parameters)) if s.get("Sid") == EVERY_REPLICA
    ]
    assert statement["Action"] == "dynamodb:GetItem"
    assert statement["Resource"] == [
        f"arn:${{AWS::Partition}}:dynamodb:{region}:${{AWS::AccountId}}:table/tickwork-jobs"
        for region in regions.split(",")
    ]
    assert statement["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["REGIONS"]}}
    for other in (STRONG_PARAMETERS, {}):
        assert not [s for s in _dynamodb_statements(template, _in("us-east-2", other)) if s.get("Sid") == EVERY_REPLICA]


def test_a_passive_region_does_not_tick(template):
    assert _tick_schedule_state(template, EVENTUAL_PARAMETERS) == "ENABLED"
    assert _tick_schedule_state(template, {**EVENTUAL_PARAMETERS, "RegionRole": "passive"}) == "DISABLED"
    # RegionRole is eventual's: a strong or single stack ticks in every region.
    assert _tick_schedule_state(template, {**STRONG_PARAMETERS, "RegionRole": "passive"}) == "ENABLED"


def _rule_holds(template: dict[str, Any], rule: str, parameters: dict[str, str]) -> bool:
    body = template["Rules"][rule]
    if not evaluate(template, body["RuleCondition"], parameters):
        return True
    return all(evaluate(template, assertion["Assert"], parameters) for assertion in body["Assertions"])


@pytest.mark.parametrize(
    "parameters", [STRONG_PARAMETERS, EVENTUAL_PARAMETERS, {}], ids=["strong", "eventual", "single"]
)
def test_every_mode_deploys_by_the_templates_rules(template, parameters):
    # strong writes no transaction and sweeps instead of TTL (docs/regions.md section 2): nothing refuses it.
    assert all(_rule_holds(template, rule, parameters) for rule in template["Rules"])


@pytest.mark.parametrize(
    ("missing", "holds"),
    [(None, True), ("GlobalTableName", False), ("GlobalTableRegions", False)],
)
def test_a_global_table_needs_its_name_and_regions(template, missing, holds):
    parameters = dict(EVENTUAL_PARAMETERS)
    if missing:
        parameters[missing] = ""
    assert _rule_holds(template, "GlobalTableNamed", parameters) is holds
    assert _rule_holds(template, "GlobalTableNamed", {}) is True


def test_a_passive_regions_stack_translates(template, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    translated = translate(template, {**EVENTUAL_PARAMETERS, "RegionRole": "passive"})
    rule = translated["Resources"]["TickFunctionEveryMinute"]["Properties"]
    assert evaluate(template, rule["State"], {**EVENTUAL_PARAMETERS, "RegionRole": "passive"}) == "DISABLED"


def _replication_alarms(template: dict[str, Any], region: str, parameters: dict[str, str]) -> dict[str, Any]:
    resources = resources_on(template, _in(region, parameters))
    return {
        props["Dimensions"][1]["Value"]: props
        for props in (r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm")
        if props.get("MetricName") == "ReplicationLatency"
    }


def test_in_eventual_each_region_alarms_on_replication_to_each_other_replica(template):
    alarms = _replication_alarms(template, "us-east-2", EVENTUAL_PARAMETERS)
    assert sorted(alarms) == ["us-east-1", "us-west-2"]  # not to itself
    for alarm in alarms.values():
        assert alarm["Namespace"] == "AWS/DynamoDB"
        assert alarm["Dimensions"][0] == {"Name": "TableName", "Value": "tickwork-jobs"}
        assert (alarm["Statistic"], alarm["Threshold"], alarm["Period"]) == ("Maximum", "60000", 300)
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    two = {**EVENTUAL_PARAMETERS, "GlobalTableRegions": "us-east-1,us-east-2"}
    assert sorted(_replication_alarms(template, "us-east-1", two)) == ["us-east-2"]
    # MRSC replicates synchronously (no lag to alarm on); one region has no replicas.
    assert _replication_alarms(template, "us-east-1", STRONG_PARAMETERS) == {}
    assert _replication_alarms(template, "us-east-1", {}) == {}


def _api_results_grants(template: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    """The ApiRole's S3 statements as deployed with these parameters, by Sid."""
    grants = {}
    for role, statement in iam_statements(template, as_written=True):
        deployed = evaluate(template, statement, parameters)
        if (
            role == "ApiRole"
            and isinstance(deployed, dict)
            and any(str(a).startswith("s3:") for a in _actions(deployed))
        ):
            grants[deployed["Sid"]] = deployed
    return grants


def test_a_single_regions_results_bucket_and_api_role_are_as_they_were(template):
    bucket = resources_on(template, _in("us-east-1", {}))["ResultsBucket"]["Properties"]
    assert "BucketName" not in bucket  # CloudFormation names it, as before
    assert set(_api_results_grants(template, {})) == {"ReadResults", "ResultsMissingIs404"}


@pytest.mark.parametrize("parameters", [STRONG_PARAMETERS, EVENTUAL_PARAMETERS], ids=["strong", "eventual"])
def test_in_several_regions_each_results_bucket_is_named_for_its_region_and_the_api_reads_the_others(
    template, parameters
):
    names = {
        region: resources_on(
            template, {**_in(region, parameters), "AWS::StackName": "tickwork", "AWS::AccountId": "1"}
        )["ResultsBucket"]["Properties"]["BucketName"]
        for region in ("us-east-1", "us-east-2")
    }
    # Each region derives another's from its own (tickwork.model.result_regions.results_bucket_in).
    assert names == {"us-east-1": "tickwork-results-1-us-east-1", "us-east-2": "tickwork-results-1-us-east-2"}
    grants = _api_results_grants(template, parameters)
    assert grants["ReadOtherRegionsResults"]["Action"] == "s3:GetObject"
    assert grants["ReadOtherRegionsResults"]["Resource"] == (
        "arn:${AWS::Partition}:s3:::${AWS::StackName}-results-${AWS::AccountId}-*/*"
    )
    assert grants["OtherRegionsResultsMissingIs404"]["Action"] == "s3:ListBucket"
    assert grants["OtherRegionsResultsMissingIs404"]["Resource"] == (
        "arn:${AWS::Partition}:s3:::${AWS::StackName}-results-${AWS::AccountId}-*"
    )
