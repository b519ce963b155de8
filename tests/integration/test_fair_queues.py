"""The local runtime plays SQS fair queues (tickwork_local.aws.moto_atomic.play_fair_queues): on a standard queue,
a group with fewer messages in flight is served first; FIFO queues keep their own rules."""

from __future__ import annotations

from typing import Any

import boto3
import pytest


@pytest.fixture
def sqs(mocked_aws: None) -> Any:
    return boto3.client("sqs", region_name="us-east-1")


def send(sqs: Any, url: str, group: str, n: int, **extra: Any) -> None:
    for i in range(n):
        sqs.send_message(QueueUrl=url, MessageBody=f"{group}-{i}", MessageGroupId=group, **extra)


def receive(sqs: Any, url: str, n: int = 10) -> list[str]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n, WaitTimeSeconds=0).get("Messages", [])
    return [m["Body"] for m in messages]


def test_a_group_with_many_in_flight_waits_behind_a_quiet_group(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="band")["QueueUrl"]
    send(sqs, url, "noisy", 20)
    assert receive(sqs, url) == [f"noisy-{i}" for i in range(10)]  # in flight now, not deleted
    send(sqs, url, "quiet", 5)

    # noisy holds 10 in flight: its visible messages rank from 10, quiet's from 0.
    assert receive(sqs, url) == [f"quiet-{i}" for i in range(5)] + [f"noisy-{i}" for i in range(10, 15)]


def test_groups_with_nothing_in_flight_interleave_and_each_keeps_its_order(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="band")["QueueUrl"]
    send(sqs, url, "a", 4)
    send(sqs, url, "b", 2)
    assert receive(sqs, url) == ["a-0", "b-0", "a-1", "b-1", "a-2", "a-3"]


def test_messages_without_a_group_keep_the_oldest_first(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="band")["QueueUrl"]
    for i in range(5):
        sqs.send_message(QueueUrl=url, MessageBody=f"m-{i}")
    assert receive(sqs, url) == [f"m-{i}" for i in range(5)]


def test_fifo_queues_are_left_to_moto(sqs: Any) -> None:
    url = sqs.create_queue(
        QueueName="band.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )["QueueUrl"]
    send(sqs, url, "a", 3)
    send(sqs, url, "b", 3)
    assert receive(sqs, url) == ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2"]
