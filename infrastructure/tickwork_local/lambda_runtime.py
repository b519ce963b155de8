"""What AWS Lambda does around a handler, done locally: the context object, and the event an SQS event
source mapping builds from received messages. Used by the local runtime and the tests alike, so the
handlers see exactly what they would see in Lambda.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LocalLambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    timeout_seconds: float = 900
    memory_limit_in_mb: int = 512
    region: str = "us-east-1"
    account_id: str = "123456789012"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        return "$LATEST"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self._started)) * 1000))


def queue_arn(queue_url: str, region: str = "us-east-1", account_id: str = "123456789012") -> str:
    return f"arn:aws:sqs:{region}:{account_id}:{queue_url.rstrip('/').rsplit('/', 1)[-1]}"


def sqs_event(messages: list[dict[str, Any]], queue_url: str, region: str = "us-east-1") -> dict[str, Any]:
    """The event an SQS event source mapping invokes a function with, from ReceiveMessage results
    (received with AttributeNames=["All"] and MessageAttributeNames=["All"])."""
    arn = queue_arn(queue_url, region)
    records = []
    for m in messages:
        attributes = dict(m.get("Attributes", {}))
        attributes.setdefault("ApproximateReceiveCount", "1")
        attributes.setdefault("SentTimestamp", str(int(time.time() * 1000)))
        attributes.setdefault("SenderId", "AIDAIENQZJOLO23YVJ4VO")
        attributes.setdefault("ApproximateFirstReceiveTimestamp", str(int(time.time() * 1000)))
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": attributes,
                "messageAttributes": {
                    name: {
                        "stringValue": value.get("StringValue"),
                        "binaryValue": value.get("BinaryValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": value["DataType"],
                    }
                    for name, value in m.get("MessageAttributes", {}).items()
                },
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


def failed_message_ids(response: dict[str, Any] | None) -> set[str]:
    """The batchItemFailures of a ReportBatchItemFailures response, as Lambda reads them."""
    return {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
