"""An SQS event as the executor reads it (tickwork.model.sqs_records) and its batch loop (tickwork.executor.batch):
the records that validate, the ids of those that do not, and the failures reported as ReportBatchItemFailures
reads them, on the sample event (events/executor-sqs-batch.json)."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from tickwork.executor.batch import failed_records
from tickwork.model.sqs_records import NotAnSqsEvent, SqsRecord, partial_batch_response, sqs_batch

from tests.conftest import load_event


def _event(*message_ids: str) -> dict[str, Any]:
    (sample,) = load_event("executor-sqs-batch.json")["Records"]
    return {"Records": [{**copy.deepcopy(sample), "messageId": message_id} for message_id in message_ids]}


def test_the_sample_events_record_reads_as_the_executor_needs_it() -> None:
    (record,) = sqs_batch(load_event("executor-sqs-batch.json")).records

    assert record.messageId == "059f36b4-87a3-44ab-83d2-661975830a7d"
    assert record.receiptHandle == "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a..."
    assert record.body.startswith('{"v":1,"run_id":"j01jd2k3m4n5p6q7r8s9t0v1w2.1795262400000"')
    assert record.attributes.ApproximateReceiveCount == 1
    assert record.eventSourceARN == "arn:aws:sqs:us-east-1:123456789012:tickwork-NormalQueue"


def test_a_record_that_does_not_validate_fails_alone_by_its_id() -> None:
    event = _event("good", "no-body", "bad-count")
    del event["Records"][1]["body"]
    event["Records"][2]["attributes"]["ApproximateReceiveCount"] = "many"

    batch = sqs_batch(event)

    assert [r.messageId for r in batch.records] == ["good"]
    assert batch.malformed == ["no-body", "bad-count"]


@pytest.mark.parametrize("event", [{}, {"Records": []}, {"Records": "nope"}, [], None])
def test_an_event_with_no_list_of_records_fails_the_invocation(event: object) -> None:
    with pytest.raises(NotAnSqsEvent):
        sqs_batch(event)


def test_a_malformed_record_with_no_message_id_fails_the_invocation() -> None:
    event = _event("m")
    del event["Records"][0]["messageId"]

    with pytest.raises(KeyError):
        sqs_batch(event)


def test_the_partial_batch_response_names_each_failed_message_as_its_item_identifier() -> None:
    assert partial_batch_response([]) == {"batchItemFailures": []}
    assert partial_batch_response(["a", "b"]) == {
        "batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]
    }


def test_records_not_done_or_whose_handler_raises_fail_in_the_records_order() -> None:
    records = sqs_batch(_event("done", "not-done", "raises", "done-too")).records

    def handler(record: SqsRecord) -> bool:
        if record.messageId == "raises":
            raise RuntimeError("boom")
        return record.messageId != "not-done"

    assert failed_records(records, handler) == ["not-done", "raises"]


def test_a_batchs_records_run_together_on_threads() -> None:
    records = sqs_batch(_event("a", "b", "c")).records
    together = threading.Barrier(3, timeout=10)  # each waits for the others: a loop one at a time breaks it

    def handler(record: SqsRecord) -> bool:
        together.wait()
        return True

    assert failed_records(records, handler, max_workers=10) == []


def test_one_record_runs_on_the_callers_thread() -> None:
    (record,) = sqs_batch(_event("alone")).records
    threads: list[threading.Thread] = []

    def handler(record: SqsRecord) -> bool:
        threads.append(threading.current_thread())
        return False

    assert failed_records([record], handler) == ["alone"]
    assert threads == [threading.current_thread()]
