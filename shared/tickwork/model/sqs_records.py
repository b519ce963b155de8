"""Lambda's SQS events as Tickwork reads them: a record's fields it uses, and the partial batch response.

Only the fields read are declared (AWS Lambda Developer Guide, "Using Lambda with Amazon SQS", the event's
example), so a record validates without loading Powertools' parser, which builds the models of every event source
it knows on import (issue #39: the executor's cold start). The response is ReportBatchItemFailures' shape: the ids
of the records that failed, each an `itemIdentifier`; an empty list acknowledges the whole batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class SqsRecordAttributes(BaseModel):
    """The system attributes an SQS record carries that Tickwork reads."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    ApproximateReceiveCount: int


class SqsRecord(BaseModel):
    """One message of an SQS event: its id (the partial batch response names it), receipt handle, body, receive
    count and the queue it came from."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    messageId: str
    receiptHandle: str
    body: str
    attributes: SqsRecordAttributes
    eventSourceARN: str


class NotAnSqsEvent(ValueError):
    """An event with no list of records: the invocation fails, and SQS delivers the batch again."""


@dataclass(frozen=True)
class SqsBatch:
    """An SQS event's records that validate, in order, and the ids of those that do not (failed items: SQS
    delivers them again until its redrive policy moves them to the dead-letter queue)."""

    records: list[SqsRecord]
    malformed: list[str]


def sqs_batch(event: object) -> SqsBatch:
    """The event's records. A record that does not validate fails by its id; one with no `messageId` cannot be
    named in the response, so it fails the invocation (KeyError), as it would fail the whole batch anyway."""
    raw_records = event.get("Records") if isinstance(event, dict) else None
    if not raw_records or not isinstance(raw_records, list):
        raise NotAnSqsEvent("not an SQS event: no list of Records")
    records, malformed = [], []
    for raw in raw_records:
        try:
            records.append(SqsRecord.model_validate(raw))
        except ValidationError:
            malformed.append(str(raw["messageId"]))
    return SqsBatch(records, malformed)


def partial_batch_response(failed_message_ids: Iterable[str]) -> dict[str, Any]:
    """ReportBatchItemFailures' response: SQS makes these messages visible again and deletes the others."""
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed_message_ids]}
