"""The local endpoint's quicker evaluation of DynamoDB's expressions (tickwork_local.aws.moto_expressions), applied
to every test's moto by tests/conftest.py: the same answers, the same errors, and nothing one request leaves in
what is kept for the next."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.parsing import expressions

LEASE = (
    "SET #status = :running, attempts = if_not_exists(attempts, :zero) + :one, lease_owner = :owner, "
    "attempt_history = list_append(if_not_exists(attempt_history, :none), :opened) REMOVE not_before"
)
QUEUED = "attribute_exists(pk) AND (#status = :queued OR (#status = :running AND lease_ms < :now))"


@pytest.fixture
def table(mocked_aws: None) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def _lease(client: Any, pk: str, owner: str) -> dict[str, Any]:
    return client.update_item(
        TableName="t",
        Key={"pk": {"S": pk}},
        UpdateExpression=LEASE,
        ConditionExpression=QUEUED,
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={
            ":running": {"S": "RUNNING"},
            ":queued": {"S": "QUEUED"},
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
            ":owner": {"S": owner},
            ":none": {"L": []},
            ":opened": {"L": [{"S": owner}]},
            ":now": {"N": "100"},
        },
        ReturnValues="ALL_NEW",
    )["Attributes"]


def test_one_expression_on_many_items_gives_each_its_own_values(table: Any) -> None:
    table.put_item(TableName="t", Item={"pk": {"S": "a"}, "status": {"S": "QUEUED"}, "not_before": {"N": "5"}})
    table.put_item(
        TableName="t",
        Item={"pk": {"S": "b"}, "status": {"S": "RUNNING"}, "lease_ms": {"N": "1"}, "attempts": {"N": "4"}},
    )
    first, second = _lease(table, "a", "one"), _lease(table, "b", "two")
    assert first == {
        "pk": {"S": "a"},
        "status": {"S": "RUNNING"},
        "attempts": {"N": "1"},
        "lease_owner": {"S": "one"},
        "attempt_history": {"L": [{"S": "one"}]},
    }
    assert second["attempts"] == {"N": "5"}
    assert second["lease_owner"] == {"S": "two"}
    assert second["attempt_history"] == {"L": [{"S": "two"}]}
    again = table.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"]
    assert again == first


def test_a_condition_that_fails_is_refused_again_and_again(table: Any) -> None:
    table.put_item(TableName="t", Item={"pk": {"S": "a"}, "status": {"S": "DONE"}})
    for _ in range(2):
        with pytest.raises(ClientError) as refused:
            _lease(table, "a", "one")
        assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert table.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}, "status": {"S": "DONE"}}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("SET a = :v SET b = :v", 'The "SET" section can only be used once in an update expression'),
        ("SET a = :v REMOVE b REMOVE c", 'The "REMOVE" section can only be used once in an update expression'),
        ("SET a = :v, a = :v", "Two document paths overlap with each other"),
    ],
)
def test_an_expression_moto_refuses_is_refused_with_its_message_each_time(
    table: Any, expression: str, message: str
) -> None:
    for _ in range(2):
        with pytest.raises(ClientError) as refused:
            table.update_item(
                TableName="t",
                Key={"pk": {"S": "a"}},
                UpdateExpression=expression,
                ExpressionAttributeValues={":v": {"S": "x"}},
            )
        assert refused.value.response["Error"]["Code"] == "ValidationException"
        assert message in refused.value.response["Error"]["Message"]


def test_an_expression_is_parsed_once(mocked_aws: None) -> None:
    parser: Any = getattr(expressions, "UpdateExpressionParser")
    assert parser.make("SET a = :v") is parser.make("SET a = :v")


def test_an_update_of_an_item_not_there_makes_it_each_time_from_the_same_expression(table: Any) -> None:
    for pk in ("x", "y"):
        made = table.update_item(
            TableName="t",
            Key={"pk": {"S": pk}},
            UpdateExpression="SET n = if_not_exists(n, :zero) + :one, s = list_append(if_not_exists(s, :none), :me)",
            ExpressionAttributeValues={
                ":zero": {"N": "0"},
                ":one": {"N": "1"},
                ":none": {"L": []},
                ":me": {"L": [{"S": pk}]},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]
        assert made == {"pk": {"S": pk}, "n": {"N": "1"}, "s": {"L": [{"S": pk}]}}
