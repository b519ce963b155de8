"""`tickwork dev --region-mode strong`'s table (tickwork_local.aws.moto_one_dynamodb): every region's requests reach
one DynamoDB, so a conditional write is decided against the item every region sees, as MRSC decides it; the other
services stay per region."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from tickwork_local.aws.moto_one_dynamodb import one_dynamodb

EAST, WEST = "us-east-1", "us-west-2"


def _create(region: str) -> None:
    boto3.client("dynamodb", region_name=region).create_table(
        TableName="jobs",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _claim(region: str) -> None:
    boto3.client("dynamodb", region_name=region).put_item(
        TableName="jobs",
        Item={"pk": {"S": "run#1"}, "owner": {"S": region}},
        ConditionExpression="attribute_not_exists(pk)",
    )


def test_a_claim_made_in_one_region_is_refused_in_the_other(mocked_aws: None) -> None:
    with one_dynamodb(EAST):
        _create(EAST)
        _claim(WEST)
        with pytest.raises(ClientError) as refused:
            _claim(EAST)
        assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
        item = boto3.client("dynamodb", region_name=EAST).get_item(TableName="jobs", Key={"pk": {"S": "run#1"}})
        assert item["Item"]["owner"] == {"S": WEST}
        boto3.client("sqs", region_name=EAST).create_queue(QueueName="high")
        assert "QueueUrls" not in boto3.client("sqs", region_name=WEST).list_queues()  # queues stay per region


def test_without_it_each_region_has_its_own_tables(mocked_aws: None) -> None:
    with one_dynamodb(EAST):
        pass
    _create(EAST)
    _create(WEST)  # no ResourceInUseException: another region's table
    _claim(WEST)
    _claim(EAST)
