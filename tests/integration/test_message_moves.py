"""The message move tasks the local endpoint and the in-process fixture play in moto
(tickwork_local.aws.moto_message_moves), against what the SQS API Reference says of them."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.sqs.models import sqs_backends


@pytest.fixture
def sqs(mocked_aws):
    client = boto3.client("sqs", region_name="us-east-1")
    dlq = client.create_queue(QueueName="dlq")["QueueUrl"]
    dlq_arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    source = client.create_queue(
        QueueName="source",
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})},
    )["QueueUrl"]
    return client, source, dlq


def _arn(client, url: str) -> str:
    return client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _bodies(client, url: str) -> list[str]:
    messages = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return sorted(m["Body"] for m in messages.get("Messages", []))


def test_a_move_without_a_destination_goes_back_to_the_queue_that_dead_letters_there(sqs):
    client, source, dlq = sqs
    for body in ("a", "b"):
        client.send_message(
            QueueUrl=dlq, MessageBody=body, MessageAttributes={"why": {"DataType": "String", "StringValue": body}}
        )
    handle = client.start_message_move_task(SourceArn=_arn(client, dlq))["TaskHandle"]
    assert handle
    assert _bodies(client, dlq) == []
    assert _bodies(client, source) == ["a", "b"]
    (task,) = client.list_message_move_tasks(SourceArn=_arn(client, dlq))["Results"]
    assert (task["Status"], task["ApproximateNumberOfMessagesMoved"], task["ApproximateNumberOfMessagesToMove"]) == (
        "COMPLETED",
        2,
        2,
    )
    assert "TaskHandle" not in task  # a handle only for a RUNNING task
    assert "DestinationArn" not in task


def test_a_moved_message_starts_its_receives_again_and_keeps_its_attributes(sqs):
    client, source, dlq = sqs
    client.send_message(
        QueueUrl=source, MessageBody="poison", MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}}
    )
    for _ in range(3):  # maxReceiveCount: the next receive moves it to the dead-letter queue
        (m,) = client.receive_message(QueueUrl=source)["Messages"]
        client.change_message_visibility(QueueUrl=source, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    assert client.receive_message(QueueUrl=source).get("Messages", []) == []
    client.start_message_move_task(SourceArn=_arn(client, dlq), DestinationArn=_arn(client, source))
    (back,) = client.receive_message(QueueUrl=source, AttributeNames=["All"], MessageAttributeNames=["All"])["Messages"]
    assert back["Body"] == "poison"
    assert back["Attributes"]["ApproximateReceiveCount"] == "1"
    assert back["MessageAttributes"]["k"]["StringValue"] == "v"


def test_what_sqs_refuses(sqs):
    client, source, dlq = sqs
    with pytest.raises(ClientError) as not_a_dlq:
        client.start_message_move_task(SourceArn=_arn(client, source))
    assert not_a_dlq.value.response["Error"]["Code"] == "InvalidParameterValue"
    with pytest.raises(ClientError) as missing:
        client.start_message_move_task(SourceArn="arn:aws:sqs:us-east-1:123456789012:nope")
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    # One active task per source queue: a second start while one runs is refused.
    client.start_message_move_task(SourceArn=_arn(client, dlq))
    backend = sqs_backends["123456789012"]["us-east-1"]
    backend._tickwork_move_tasks.by_source[_arn(client, dlq)][-1].status = "RUNNING"
    with pytest.raises(ClientError) as running:
        client.start_message_move_task(SourceArn=_arn(client, dlq))
    # botocore gives the query-compatible code SQS sends beside its JSON one (tickwork.aws.dead_letters takes both)
    assert running.value.response["Error"]["Code"] in {
        "UnsupportedOperation",
        "AWS.SimpleQueueService.UnsupportedOperation",
    }
    (task,) = client.list_message_move_tasks(SourceArn=_arn(client, dlq), MaxResults=10)["Results"]
    assert task["Status"] == "RUNNING"
    assert client.cancel_message_move_task(TaskHandle=task["TaskHandle"])["ApproximateNumberOfMessagesMoved"] == 0
