"""The SQS dead letters' redrive and its audit record (docs/security.md "Audit trail"): the move task writes nothing
to the table, so its record is written first as an intent, confirmed once the moves started, and an intent left
pending is settled by the tick from what SQS lists. A crash or a failure at any point leaves, once the tick has
settled, exactly one record if a move task was started and none if not; a pending intent is never listed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from tickwork.aws.dead_letters import MoveRefused
from tickwork.faults import REDRIVE_CRASH_POINTS, CrashPoint
from tickwork.model.audit import Actor, ActorKind, Attribution
from tickwork.model.errors import Conflict
from tickwork.model.policies import Band
from tickwork.model.redrive_intents import REDRIVE_ACTION, SETTLES_AFTER, redrive_shown
from tickwork.store.audit import record_of
from tickwork.store.codec import deserialize

from tests.faults.crashes import ProcessKilled

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ADMIN_TENANT = "123456789012:role/tickwork-admin"
OPS = Attribution(
    actor=Actor(kind=ActorKind.IAM, id="arn:aws:sts::123456789012:assumed-role/tickwork-admin/ops", display="ops"),
    request_id="req-1",
)


def _poison(pipeline: Any, band: Band, count: int = 1) -> None:
    """Messages the executor could not process, on the band's SQS dead-letter queue."""
    for i in range(count):
        pipeline.sqs.send_message(QueueUrl=pipeline.resources.dlq_urls[band.value], MessageBody=f"poison {i}")


def _listed(pipeline: Any, *, tenant: str | None = "*") -> list[dict[str, Any]]:
    """The audit trail as GET /v1/audit lists it to an admin: every tenant's (`*`) or its own tenant's (None)."""
    page = pipeline.services.audit.records(ADMIN_TENANT, admin=True, tenant=tenant, since=None, until=None)
    return [record.model_dump(mode="json") for record in page.items]


def _items(pipeline: Any, kind: str) -> list[dict[str, Any]]:
    """The table's items of a kind (a test's scan): AUDIT, the records; AUDIT_INTENT, the intents pending."""
    pages = pipeline.services.store.shared_table.client.get_paginator("scan").paginate(
        TableName=pipeline.resources.table_name,
        FilterExpression="kind = :k",
        ExpressionAttributeValues={":k": {"S": kind}},
    )
    return [item for page in pages for item in page["Items"]]


def _pending(pipeline: Any) -> list[dict[str, Any]]:
    """The intents not yet settled (a settled one stays a day, for TTL to remove: no role deletes an item)."""
    return [item for item in _items(pipeline, "AUDIT_INTENT") if "due_shard" in item]


def _moves_started(pipeline: Any, band: Band) -> int:
    arn = pipeline.sqs.get_queue_attributes(
        QueueUrl=pipeline.resources.dlq_urls[band.value], AttributeNames=["QueueArn"]
    )
    return len(pipeline.sqs.list_message_move_tasks(SourceArn=arn["Attributes"]["QueueArn"], MaxResults=10)["Results"])


def _settled_by_the_tick(pipeline: Any) -> None:
    """Past the request's time: the tick settles what a crash left pending."""
    pipeline.clock.advance(60)
    pipeline.tick()


def _redrive(pipeline: Any, *bands: Band) -> Any:
    return pipeline.services.dead_letters.redrive(list(bands), by=OPS, tenant=ADMIN_TENANT)


def _dying_at(pipeline: Any, point: CrashPoint, *bands: Band) -> None:
    """A redrive of these bands whose request dies at `point` (its first pass)."""
    pipeline.crashes.arm(point)
    with pytest.raises(ProcessKilled):
        _redrive(pipeline, *bands)
    assert pipeline.crashes.kills == 1


def _the_record(pipeline: Any, *bands: Band) -> dict[str, Any]:
    """The one record in the trail, naming these bands and its request's actor; no intent left pending."""
    (record,) = _listed(pipeline)
    resource, changes = redrive_shown(bands)
    assert (record["action"], record["resource"], record["changes"]) == (
        REDRIVE_ACTION,
        resource.model_dump(mode="json"),
        {name: change.model_dump(mode="json") for name, change in changes.items()},
    )
    assert (record["actor"]["display"], record["request_id"], record["tenant"]) == ("ops", "req-1", ADMIN_TENANT)
    assert _listed(pipeline, tenant=None) == [record]
    assert _pending(pipeline) == []
    return record


def _no_record(pipeline: Any) -> None:
    assert _listed(pipeline) == _listed(pipeline, tenant=None) == []
    assert _items(pipeline, "AUDIT") == _pending(pipeline) == []


class _Refusing:
    """A client whose named operation fails as AWS answers an error (nothing done), for the calls `when` picks.
    Everything else is the real client's."""

    def __init__(
        self,
        client: Any,
        operation: str,
        *,
        code: str = "InternalServerError",
        when: Callable[[dict[str, Any]], bool] = lambda params: True,
    ) -> None:
        self._client, self._operation, self._code, self._when = client, operation, code, when
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        if name != self._operation:
            return getattr(self._client, name)

        def refuse(**params: Any) -> Any:
            if not self._when(params):
                return getattr(self._client, name)(**params)
            self.refused += 1
            error = {"Error": {"Code": self._code, "Message": "injected"}}
            raise ClientError(error, name)  # type: ignore[arg-type]

        return refuse


@contextmanager
def _sqs_refusing(pipeline: Any, operation: str, **how: Any) -> Iterator[_Refusing]:
    """The dead letters' SQS client (the API's and the tick's), for the block, refusing `operation`."""
    queues = pipeline.services.dead_letter_queues
    refusing = _Refusing(queues._sqs, operation, **how)
    queues._sqs = refusing
    try:
        yield refusing
    finally:
        queues._sqs = refusing._client


@contextmanager
def _dynamodb_refusing(pipeline: Any, operation: str) -> Iterator[_Refusing]:
    """The store's DynamoDB client, for the block, refusing `operation`."""
    store = pipeline.services.store
    refusing = _Refusing(store._db, operation)
    store._db = refusing
    try:
        yield refusing
    finally:
        store._db = refusing._client


class _StartThen:
    """The dead letters' SQS client, whose StartMessageMoveTask starts the task (or not: `started`), then ends in
    `error` instead of SQS's answer: the process dying, a timeout past the SDK's retries, a retry's answer."""

    def __init__(self, client: Any, *, started: bool, error: BaseException) -> None:
        self._client, self.started, self.error = client, started, error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def start_message_move_task(self, **params: Any) -> Any:
        if self.started:
            self._client.start_message_move_task(**params)
        raise self.error


@contextmanager
def _start_then(pipeline: Any, *, started: bool, error: BaseException) -> Iterator[None]:
    queues = pipeline.services.dead_letter_queues
    queues._sqs = _StartThen(queues._sqs, started=started, error=error)
    try:
        yield
    finally:
        queues._sqs = queues._sqs._client


def test_a_process_dying_once_sqs_started_the_move_leaves_its_record(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    with (
        _start_then(timed_pipeline, started=True, error=ProcessKilled("after the start")),
        pytest.raises(ProcessKilled),
    ):
        _redrive(timed_pipeline, Band.LOW)
    assert _moves_started(timed_pipeline, Band.LOW) == 1
    _settled_by_the_tick(timed_pipeline)
    _the_record(timed_pipeline, Band.LOW)


# Whether a move task has started when the request dies there.
MOVED_BY = {
    CrashPoint.REDRIVE_BEFORE_INTENT: False,
    CrashPoint.REDRIVE_AFTER_INTENT: False,
    CrashPoint.REDRIVE_AFTER_MOVE: True,
    CrashPoint.REDRIVE_AFTER_CONFIRM: True,
}


def test_every_redrive_crash_point_is_walked():
    assert set(MOVED_BY) == set(REDRIVE_CRASH_POINTS)


@pytest.mark.parametrize("point", list(MOVED_BY), ids=lambda p: p.value)
def test_a_request_dying_at_each_point_leaves_one_record_iff_a_move_started(timed_pipeline, point):
    _poison(timed_pipeline, Band.LOW, 2)
    _dying_at(timed_pipeline, point, Band.LOW)
    assert _moves_started(timed_pipeline, Band.LOW) == int(MOVED_BY[point])
    if point is not CrashPoint.REDRIVE_AFTER_CONFIRM:
        assert _listed(timed_pipeline) == []  # a pending intent is not a record: never listed
    _settled_by_the_tick(timed_pipeline)
    if MOVED_BY[point]:
        record = _the_record(timed_pipeline, Band.LOW)
        _settled_by_the_tick(timed_pipeline)  # settled once: a later tick changes nothing
        assert _listed(timed_pipeline) == [record]
    else:
        _no_record(timed_pipeline)


def test_a_request_dying_between_two_bands_moves_is_recorded_with_the_first_only(timed_pipeline):
    _poison(timed_pipeline, Band.HIGH)
    _poison(timed_pipeline, Band.LOW)
    _dying_at(timed_pipeline, CrashPoint.REDRIVE_AFTER_MOVE, Band.HIGH, Band.LOW)
    assert (_moves_started(timed_pipeline, Band.HIGH), _moves_started(timed_pipeline, Band.LOW)) == (1, 0)
    (intent,) = _pending(timed_pipeline)
    assert (
        '"after":["high","low"]' in record_of(deserialize(intent)).model_dump_json()
    )  # the intent names both; the record, what started
    _settled_by_the_tick(timed_pipeline)
    _the_record(timed_pipeline, Band.HIGH)


def test_a_redrive_that_lives_confirms_its_record_itself(timed_pipeline):
    _poison(timed_pipeline, Band.HIGH)
    _poison(timed_pipeline, Band.NORMAL)
    result = _redrive(timed_pipeline, Band.HIGH, Band.NORMAL, Band.LOW)
    assert (result.started, result.empty) == ([Band.HIGH, Band.NORMAL], [Band.LOW])
    _the_record(timed_pipeline, Band.HIGH, Band.NORMAL)  # before any tick


def test_sqs_refusing_the_move_leaves_no_record(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    with _sqs_refusing(timed_pipeline, "start_message_move_task", code="AccessDenied"), pytest.raises(MoveRefused):
        _redrive(timed_pipeline, Band.LOW)
    assert _moves_started(timed_pipeline, Band.LOW) == 0
    _no_record(timed_pipeline)  # removed by the request itself
    _settled_by_the_tick(timed_pipeline)
    _no_record(timed_pipeline)


def test_sqs_refusing_the_second_bands_move_records_the_first(timed_pipeline):
    _poison(timed_pipeline, Band.HIGH)
    _poison(timed_pipeline, Band.LOW)
    low = timed_pipeline.resources.dlq_urls["low"].rsplit("/", 1)[-1]
    with (
        _sqs_refusing(
            timed_pipeline, "start_message_move_task", code="AccessDenied", when=lambda p: p["SourceArn"].endswith(low)
        ) as sqs,
        pytest.raises(MoveRefused),
    ):
        _redrive(timed_pipeline, Band.HIGH, Band.LOW)
    assert sqs.refused == 1
    assert (_moves_started(timed_pipeline, Band.HIGH), _moves_started(timed_pipeline, Band.LOW)) == (1, 0)
    _the_record(timed_pipeline, Band.HIGH)


@pytest.mark.parametrize("started", [True, False], ids=["started", "not started"])
def test_a_start_sqs_did_not_answer_is_left_to_the_tick_which_reads_whether_it_happened(timed_pipeline, started):
    _poison(timed_pipeline, Band.LOW)
    timeout = ReadTimeoutError(endpoint_url="https://sqs.us-east-1.amazonaws.com/")
    with _start_then(timed_pipeline, started=started, error=timeout), pytest.raises(ReadTimeoutError):
        _redrive(timed_pipeline, Band.LOW)
    assert _moves_started(timed_pipeline, Band.LOW) == int(started)
    assert len(_pending(timed_pipeline)) == 1
    _settled_by_the_tick(timed_pipeline)
    if started:
        _the_record(timed_pipeline, Band.LOW)
    else:
        _no_record(timed_pipeline)


def test_a_retried_start_told_the_queue_is_being_moved_is_left_to_the_tick(timed_pipeline):
    """The SDK's first send timed out after SQS started the task; its retry is told a task is moving (its own):
    the answer says running, and the tick, reading the task of the request's time, confirms the record."""
    _poison(timed_pipeline, Band.LOW)
    running = {
        "Error": {"Code": "UnsupportedOperation", "Message": "running"},
        "ResponseMetadata": {"RetryAttempts": 1},
    }
    retried = ClientError(running, "StartMessageMoveTask")  # type: ignore[arg-type]
    with (
        _start_then(timed_pipeline, started=True, error=retried),
        pytest.raises(Conflict, match="moving its messages still"),
    ):
        _redrive(timed_pipeline, Band.LOW)
    assert len(_pending(timed_pipeline)) == 1
    _settled_by_the_tick(timed_pipeline)
    _the_record(timed_pipeline, Band.LOW)


def test_an_intent_that_cannot_be_written_starts_no_move(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    with _dynamodb_refusing(timed_pipeline, "put_item"), pytest.raises(ClientError):
        _redrive(timed_pipeline, Band.LOW)
    assert _moves_started(timed_pipeline, Band.LOW) == 0
    _settled_by_the_tick(timed_pipeline)
    _no_record(timed_pipeline)


def test_a_confirm_that_fails_answers_the_moves_and_the_tick_confirms_the_record(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    with _dynamodb_refusing(timed_pipeline, "transact_write_items") as dynamodb:
        result = _redrive(timed_pipeline, Band.LOW)
    assert dynamodb.refused
    assert result.started == [Band.LOW]
    assert _listed(timed_pipeline) == []
    assert len(_pending(timed_pipeline)) == 1
    _settled_by_the_tick(timed_pipeline)
    _the_record(timed_pipeline, Band.LOW)


def test_a_not_happened_mark_that_fails_leaves_the_intent_for_the_tick(timed_pipeline):
    """Another admin's move started between this request's read and its start (SQS: one at a time): nothing
    started, 409; marking the intent not happened fails; the tick, finding no move of the request's time, marks it."""
    _poison(timed_pipeline, Band.LOW)
    with (
        _sqs_refusing(timed_pipeline, "start_message_move_task", code="UnsupportedOperation"),
        _dynamodb_refusing(timed_pipeline, "update_item") as dynamodb,
        pytest.raises(Conflict, match="moving its messages still"),
    ):
        _redrive(timed_pipeline, Band.LOW)
    assert dynamodb.refused
    assert len(_pending(timed_pipeline)) == 1
    assert _listed(timed_pipeline) == []
    _settled_by_the_tick(timed_pipeline)
    _no_record(timed_pipeline)


def test_an_intent_sqs_cannot_be_asked_about_stays_for_the_next_tick(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    _dying_at(timed_pipeline, CrashPoint.REDRIVE_AFTER_MOVE, Band.LOW)
    with _sqs_refusing(timed_pipeline, "list_message_move_tasks") as sqs:
        _settled_by_the_tick(timed_pipeline)
    assert sqs.refused
    assert len(_pending(timed_pipeline)) == 1
    assert _listed(timed_pipeline) == []
    _settled_by_the_tick(timed_pipeline)
    _the_record(timed_pipeline, Band.LOW)


def test_a_move_task_outside_the_requests_time_is_not_its(timed_pipeline):
    """A move started earlier (another redrive, recorded by its own request) does not confirm an intent whose
    request died before its own move."""
    _poison(timed_pipeline, Band.LOW)
    timed_pipeline.services.dead_letters.redrive([Band.LOW])  # unattributed: no record
    timed_pipeline.clock.advance(300)
    _poison(timed_pipeline, Band.LOW)
    _dying_at(timed_pipeline, CrashPoint.REDRIVE_AFTER_INTENT, Band.LOW)
    assert _moves_started(timed_pipeline, Band.LOW) == 1
    _settled_by_the_tick(timed_pipeline)
    _no_record(timed_pipeline)


def test_an_intent_is_left_to_its_request_until_the_request_has_surely_ended(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    _dying_at(timed_pipeline, CrashPoint.REDRIVE_AFTER_INTENT, Band.LOW)
    timed_pipeline.clock.advance(10)
    timed_pipeline.tick()
    assert len(_pending(timed_pipeline)) == 1


class _SettledMeanwhile:
    """A fault plan: once the moves started, the tick settles the intent (a request that outlived its time)."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def reached(self, point: CrashPoint) -> None:
        if point is CrashPoint.REDRIVE_AFTER_MOVE:
            self.pipeline.clock.advance(60)
            assert self.pipeline.services.redrive_intents.settle_due() == 1


def test_a_request_whose_intent_the_tick_settled_first_leaves_one_record(timed_pipeline, caplog):
    _poison(timed_pipeline, Band.LOW)
    timed_pipeline.services.dead_letters.faults = _SettledMeanwhile(timed_pipeline)
    assert _redrive(timed_pipeline, Band.LOW).started == [Band.LOW]
    _the_record(timed_pipeline, Band.LOW)
    assert [r.message for r in caplog.records if r.levelname in ("WARNING", "ERROR")] == [
        "the redrive's audit record was settled already, by the tick"
    ]


def test_a_pending_intent_is_never_archived(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    _dying_at(timed_pipeline, CrashPoint.REDRIVE_AFTER_MOVE, Band.LOW)
    timed_pipeline.clock.advance(5)
    assert timed_pipeline.tick()["dispatched"] == 0
    bucket = timed_pipeline.services.settings.audit_bucket
    assert timed_pipeline.s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
    _settled_by_the_tick(timed_pipeline)
    _settled_by_the_tick(timed_pipeline)  # the confirmed record, archived
    (listed,) = timed_pipeline.s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert listed["Key"].endswith(f"-{_the_record(timed_pipeline, Band.LOW)['id']}.json")


def test_each_write_of_an_intent_is_conditional(timed_pipeline):
    """Put where its key is new; confirm or removal only while it is pending as written: once settled, another
    settle loses (False), whichever it is."""
    from tickwork.store.audit import IntentIdTaken

    audit = timed_pipeline.services.audit
    resource, changes = redrive_shown([Band.LOW])

    def intend() -> Any:
        return audit.intend(
            OPS,
            tenant=ADMIN_TENANT,
            action=REDRIVE_ACTION,
            resource=resource,
            changes=changes,
            settles_after=SETTLES_AFTER,
        )

    confirmed, removed = intend(), intend()
    with pytest.raises(IntentIdTaken):
        audit.intents.write(confirmed.record, settles_at=timed_pipeline.clock.now())
    assert audit.intents.confirm(confirmed, confirmed.record) is True
    assert audit.intents.confirm(confirmed, confirmed.record) is False
    assert audit.intents.mark_not_happened(confirmed) is False
    assert audit.intents.mark_not_happened(removed) is True
    assert audit.intents.confirm(removed, removed.record) is False
    assert [r["id"] for r in _listed(timed_pipeline)] == [confirmed.record.id]
    assert _pending(timed_pipeline) == []
    # Settled, an intent says how and is left to TTL, a day after it was due (no role deletes an item).
    settled = {i["sk"]["S"].rsplit("#", 1)[-1]: i for i in _items(timed_pipeline, "AUDIT_INTENT")}
    assert {record_id: item["settled"]["S"] for record_id, item in settled.items()} == {
        confirmed.record.id: "confirmed",
        removed.record.id: "not_happened",
    }
    day_after = confirmed.due_at // 1000 + 86_400
    assert int(settled[confirmed.record.id]["expires_at"]["N"]) == day_after


def test_an_action_without_an_attribution_writes_no_intent(timed_pipeline):
    _poison(timed_pipeline, Band.LOW)
    assert timed_pipeline.services.dead_letters.redrive([Band.LOW]).started == [Band.LOW]
    _no_record(timed_pipeline)
