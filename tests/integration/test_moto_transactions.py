"""moto undoes a cancelled TransactWriteItems by the items it names (tickwork_local.aws.moto_transactions), not by
copying whole tables: all of a transaction's writes or none, as DynamoDB answers, at a cost that does not grow
with the table."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models.table import Table


@pytest.fixture
def ddb(mocked_aws: None) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.create_table(
        TableName="h",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.put_item(TableName="t", Item={"pk": {"S": "job"}, "sk": {"S": "a"}, "n": {"N": "1"}})
    client.put_item(TableName="h", Item={"id": {"S": "x"}, "n": {"N": "1"}})
    return client


@pytest.fixture
def no_table_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Table, memo: Any) -> Table:
        raise AssertionError("a whole table was copied")

    monkeypatch.setattr(Table, "__deepcopy__", refuse, raising=False)


def every_item(ddb: Any) -> dict[str, list[dict[str, Any]]]:
    return {name: sorted(ddb.scan(TableName=name)["Items"], key=repr) for name in ("t", "h")}


def cancelled_transaction(ddb: Any) -> list[dict[str, Any]]:
    """A put of a new item, an update of an existing one and a delete, then a condition that fails."""
    return [
        {"Put": {"TableName": "t", "Item": {"pk": {"S": "job"}, "sk": {"S": "b"}}}},
        {
            "Update": {
                "TableName": "t",
                "Key": {"pk": {"S": "job"}, "sk": {"S": "a"}},
                "UpdateExpression": "SET n = :two",
                "ExpressionAttributeValues": {":two": {"N": "2"}},
            }
        },
        {"Delete": {"TableName": "h", "Key": {"id": {"S": "x"}}}},
        {"Put": {"TableName": "h", "Item": {"id": {"S": "y"}}, "ConditionExpression": "attribute_exists(id)"}},
    ]


def test_a_cancelled_transaction_leaves_every_item_it_named_as_it_was(ddb: Any, no_table_copied: None) -> None:
    before = every_item(ddb)
    with pytest.raises(ClientError) as cancelled:
        ddb.transact_write_items(TransactItems=cancelled_transaction(ddb))
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = [r["Code"] for r in cancelled.value.response["CancellationReasons"]]
    assert reasons == ["None", "None", "None", "ConditionalCheckFailed"]
    assert every_item(ddb) == before


def stream_records(table: str) -> list[dict[str, Any]]:
    """Every record the table's stream holds, through the DynamoDB Streams API (its regional endpoint: botocore's
    own rules send DescribeStream to an account endpoint moto does not serve)."""
    streams = boto3.client(
        "dynamodbstreams", region_name="us-east-1", endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com"
    )
    arn = boto3.client("dynamodb", region_name="us-east-1").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    return streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]  # type: ignore[no-any-return]


def test_a_cancelled_transaction_leaves_nothing_on_the_tables_streams(ddb: Any) -> None:
    """A stream reader (the local replicator, tickwork_local.aws.replicator) must not see writes that never happened."""
    spec = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    for name in ("t", "h"):
        ddb.update_table(TableName=name, StreamSpecification=spec)
    with pytest.raises(ClientError):
        ddb.transact_write_items(TransactItems=cancelled_transaction(ddb))
    assert (stream_records("t"), stream_records("h")) == ([], [])
    ddb.transact_write_items(TransactItems=cancelled_transaction(ddb)[:3])
    assert [r["eventName"] for r in stream_records("t")] == ["INSERT", "MODIFY"]
    assert [r["eventName"] for r in stream_records("h")] == ["REMOVE"]


def test_a_transaction_naming_one_item_twice_is_refused_and_writes_nothing(ddb: Any, no_table_copied: None) -> None:
    before = every_item(ddb)
    key = {"pk": {"S": "job"}, "sk": {"S": "a"}}
    twice = [
        {"Update": {"TableName": "t", "Key": key, "UpdateExpression": "SET n = :v", "ExpressionAttributeValues": v}}
        for v in ({":v": {"N": "5"}}, {":v": {"N": "6"}})
    ]
    with pytest.raises(ClientError) as refused:
        ddb.transact_write_items(TransactItems=twice)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert every_item(ddb) == before


def test_a_transaction_whose_conditions_hold_writes_all_of_it(ddb: Any, no_table_copied: None) -> None:
    items = cancelled_transaction(ddb)[:3]
    ddb.transact_write_items(TransactItems=items)
    assert every_item(ddb) == {
        "t": sorted(
            [{"pk": {"S": "job"}, "sk": {"S": "a"}, "n": {"N": "2"}}, {"pk": {"S": "job"}, "sk": {"S": "b"}}], key=repr
        ),
        "h": [],
    }


def test_outside_a_transaction_moto_copies_as_before() -> None:
    import copy

    import moto.dynamodb.models as moto_dynamodb

    assert moto_dynamodb.copy is copy  # the stand-in lives only for the length of a transaction
