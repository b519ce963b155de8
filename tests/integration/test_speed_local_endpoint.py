"""The local endpoint made faster (issue 16): kept-alive connections and the request counts, against a moto
server in this process over real HTTP. The atomicity of each request must survive both."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urlparse

import boto3
import pytest
from tickwork_local.aws.motoserver import REQUEST_COUNTS_PATH, InProcessMoto, request_kind

TABLE = "speed"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    moto = InProcessMoto("127.0.0.1", 0)
    try:
        url = moto.start()
        boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield url
    finally:
        moto.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _dynamodb_request(
    conn: http.client.HTTPConnection, operation: str, body: dict[str, Any]
) -> tuple[http.client.HTTPResponse, Any]:
    """A DynamoDB call by hand on `conn` (so the test sees the connection itself)."""
    conn.request(
        "POST",
        "/",
        body=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"DynamoDB_20120810.{operation}",
            "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261123/us-east-1/dynamodb/aws4_request, "
            "SignedHeaders=host, Signature=0",
        },
    )
    response = conn.getresponse()
    return response, json.loads(response.read() or b"{}")


def test_requests_follow_each_other_on_one_kept_alive_connection(endpoint: str) -> None:
    """Each request's body is read whole, so the next request on the same connection parses cleanly: a put
    then a get of the same item on one socket, and the server never says `Connection: close`."""
    conn = http.client.HTTPConnection(urlparse(endpoint).netloc, timeout=10)
    item = {"pk": {"S": "kept"}, "payload": {"S": "x" * 5000}}
    put, _ = _dynamodb_request(conn, "PutItem", {"TableName": TABLE, "Item": item})
    socket_after_put = conn.sock
    got, body = _dynamodb_request(conn, "GetItem", {"TableName": TABLE, "Key": {"pk": {"S": "kept"}}})
    assert (put.status, got.status) == (200, 200)
    assert body["Item"] == item
    assert put.getheader("Connection") != "close"
    assert conn.sock is socket_after_put is not None  # the same connection served both
    conn.close()


def test_a_chunked_request_is_served_and_its_connection_closed(endpoint: str) -> None:
    """Without a Content-Length the body's end is only known by reading it: werkzeug's own way (close) stays."""
    conn = http.client.HTTPConnection(urlparse(endpoint).netloc, timeout=10)
    body = json.dumps({"TableName": TABLE, "Item": {"pk": {"S": "chunked"}}}).encode()
    conn.request(
        "POST",
        "/",
        body=iter([body]),
        encode_chunked=True,
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "DynamoDB_20120810.PutItem",
            "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261123/us-east-1/dynamodb/aws4_request, "
            "SignedHeaders=host, Signature=0",
        },
    )
    response = conn.getresponse()
    response.read()
    assert response.status == 200
    assert response.getheader("Connection") == "close"
    conn.close()
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    assert ddb.get_item(TableName=TABLE, Key={"pk": {"S": "chunked"}})["Item"] == {"pk": {"S": "chunked"}}


def test_conditional_puts_racing_on_kept_alive_connections_let_exactly_one_through_per_key(endpoint: str) -> None:
    """The claim's `attribute_not_exists` put, raced by 8 clients (each with its own pool of kept-alive
    connections) over 60 keys: exactly 60 succeed, as DynamoDB promises."""
    clients = [boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1") for _ in range(8)]
    wins: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(clients))

    def claim(client: Any) -> None:
        barrier.wait()
        for n in range(60):
            try:
                client.put_item(
                    TableName=TABLE,
                    Item={"pk": {"S": f"claim-{n}"}},
                    ConditionExpression="attribute_not_exists(pk)",
                )
            except client.exceptions.ConditionalCheckFailedException:
                continue
            with lock:
                wins.append(f"claim-{n}")

    threads = [threading.Thread(target=claim, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(wins) == sorted(f"claim-{n}" for n in range(60))


def test_the_endpoint_counts_the_requests_it_serves_by_kind(endpoint: str) -> None:
    def served() -> dict[str, int]:
        conn = http.client.HTTPConnection(urlparse(endpoint).netloc, timeout=10)
        conn.request("GET", REQUEST_COUNTS_PATH)
        response = conn.getresponse()
        assert response.status == 200
        return dict(json.loads(response.read()))

    before = served()
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    ddb.put_item(TableName=TABLE, Item={"pk": {"S": "counted"}})
    ddb.put_item(TableName=TABLE, Item={"pk": {"S": "counted-2"}})
    ddb.get_item(TableName=TABLE, Key={"pk": {"S": "counted"}})
    sqs.list_queues()
    after = served()
    grown = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert grown == {"dynamodb:PutItem": 2, "dynamodb:GetItem": 1, "sqs:ListQueues": 1}


@pytest.mark.parametrize(
    ("headers", "args", "method", "kind"),
    [
        (
            {"X-Amz-Target": "DynamoDB_20120810.UpdateItem", "Authorization": "x Credential=k/d/r/dynamodb/aws4"},
            {},
            "POST",
            "dynamodb:UpdateItem",
        ),
        (
            {"Authorization": "x Credential=k/d/r/monitoring/aws4_request, S=1"},
            {"Action": "PutMetricData"},
            "POST",
            "monitoring:PutMetricData",
        ),
        ({"Authorization": "x Credential=k/d/r/s3/aws4_request"}, {}, "PUT", "s3:PUT"),
        ({}, {}, "GET", "unknown:GET"),
    ],
)
def test_a_request_kind_is_service_and_operation(
    headers: dict[str, str], args: dict[str, str], method: str, kind: str
) -> None:
    assert request_kind(headers, args, method) == kind


def test_sqs_visibility_read_from_the_wall_clock_agrees_with_motos_own(endpoint: str) -> None:
    """`skip_repeated_work` reads SQS's clock with time.time(): the same answers as moto's datetime arithmetic
    for messages visible, invisible, delayed and not, around now."""
    from moto.core.utils import unix_time_millis
    from moto.sqs.models import Message

    now = unix_time_millis()
    for offset in (-5000.0, -1.0, 1000.0, 5000.0):
        message = Message("id", "body")
        message.visible_at = now + offset
        message.delayed_until = now + offset
        assert message.visible == (unix_time_millis() > message.visible_at)
        assert message.delayed == (unix_time_millis() < message.delayed_until)


def test_a_delayed_message_arrives_after_its_delay_and_not_before(endpoint: str) -> None:
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    url = sqs.create_queue(QueueName="speed-delay")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=3).get("Messages", [])
    assert [m["Body"] for m in received] == ["later"]


def test_routing_lists_motos_services_once(endpoint: str) -> None:
    from moto import backends

    assert "dynamodb" in backends.list_of_moto_modules()
    assert backends.list_of_moto_modules() is backends.list_of_moto_modules()


def test_a_test_that_moves_sqss_clock_still_moves_it_once_the_local_endpoint_ran_in_process(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local endpoint's faster SQS clock is installed in this process (InProcessMoto): a later test of the
    same pytest worker that moves moto's SQS clock to its fake clock (the fault suite, the precise-start tests)
    must still see messages delayed and visible by that clock, not by the wall clock. Found when a precise-start
    test failed under xdist after this module had run in the same worker."""
    import moto.sqs.models
    from moto.sqs.models import Message

    fake_ms = 1_000_000.0  # 1970: every real instant is long after it
    monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *_: fake_ms)
    message = Message("id", "body")
    message.delayed_until = fake_ms + 1000
    message.visible_at = fake_ms + 1000
    assert message.delayed  # by the fake clock, still delayed
    assert not message.visible
    fake_ms += 2000
    assert not message.delayed
    assert message.visible


def test_item_answers_written_directly_are_the_answers_motos_serializer_writes(endpoint: str) -> None:
    """Every DynamoDB answer of a varied workload is written both ways; they must parse to the same JSON."""
    from moto.dynamodb.responses import DynamoHandler

    direct, moto_own = DynamoHandler.serialized, DynamoHandler._tickwork_moto_serialized  # type: ignore[attr-defined]
    compared: Counter[str] = Counter()
    differences: list[str] = []

    def both(self: Any, action_result: Any) -> Any:
        fast, slow = direct(self, action_result), moto_own(self, action_result)
        if fast[0] != slow[0] or json.loads(fast[2] or "{}") != json.loads(slow[2] or "{}"):
            differences.append(f"{self._get_action()}: {fast[2]} != {slow[2]}")
        compared[self._get_action()] += 1
        return fast

    db = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    rich = {
        "pk": {"S": "rich"},
        "blob": {"B": b"\x00\x01\xfe"},
        "n": {"N": "1.50"},
        "names": {"SS": ["a", "b"]},
        "counts": {"NS": ["1", "2"]},
        "blobs": {"BS": [b"\x01", b"\x02"]},
        "nested": {"M": {"list": {"L": [{"BOOL": True}, {"NULL": True}, {"S": "é ✓"}]}, "empty": {"M": {}}}},
    }
    DynamoHandler.serialized = both  # type: ignore[method-assign]
    try:
        db.put_item(TableName=TABLE, Item=rich)
        db.put_item(TableName=TABLE, Item={**rich, "pk": {"S": "rich-2"}}, ReturnValues="ALL_OLD")
        db.get_item(TableName=TABLE, Key={"pk": {"S": "rich"}}, ConsistentRead=True)
        db.get_item(TableName=TABLE, Key={"pk": {"S": "absent"}})
        for returned in ("NONE", "ALL_NEW", "ALL_OLD", "UPDATED_NEW", "UPDATED_OLD"):
            db.update_item(
                TableName=TABLE,
                Key={"pk": {"S": "rich"}},
                UpdateExpression="SET n = n + :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues=returned,
                ReturnConsumedCapacity="TOTAL",
            )
        with pytest.raises(db.exceptions.ConditionalCheckFailedException):  # an error: moto's serializer writes it
            db.update_item(
                TableName=TABLE,
                Key={"pk": {"S": "rich"}},
                UpdateExpression="SET n = :one",
                ConditionExpression="attribute_not_exists(pk)",
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        page = db.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "rich"}},
            Limit=1,
            ReturnConsumedCapacity="TOTAL",
        )
        db.query(TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": "no"}})
        got = db.batch_get_item(RequestItems={TABLE: {"Keys": [{"pk": {"S": "rich"}}, {"pk": {"S": "rich-2"}}]}})
        db.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": {**rich, "pk": {"S": "rich-3"}}}}]})
        db.transact_write_items(TransactItems=[{"Put": {"TableName": TABLE, "Item": {**rich, "pk": {"S": "t"}}}}])
        db.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": {"pk": {"S": "t"}}}}])
        db.delete_item(TableName=TABLE, Key={"pk": {"S": "rich-3"}}, ReturnValues="ALL_OLD")
        db.describe_table(TableName=TABLE)  # not an item answer: moto's serializer alone, compared all the same
    finally:
        DynamoHandler.serialized = direct  # type: ignore[method-assign]

    assert differences == []
    assert set(compared) >= {
        "PutItem",
        "GetItem",
        "UpdateItem",
        "Query",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "TransactGetItems",
        "DeleteItem",
        "DescribeTable",
    }
    # And botocore reads the direct answers as it reads moto's: binary back as bytes, sets as sets.
    (item,) = page["Items"]
    assert item["blob"] == {"B": b"\x00\x01\xfe"}
    assert item["blobs"] == {"BS": [b"\x01", b"\x02"]}
    assert item["nested"]["M"]["list"]["L"][2] == {"S": "é ✓"}
    assert Decimal(item["n"]["N"]) == Decimal("6.5")
    assert len(got["Responses"][TABLE]) == 2
