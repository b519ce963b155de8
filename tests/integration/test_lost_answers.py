"""A conditional write that DynamoDB applied but whose answer was lost (a connection reset, a read timeout) is sent
again by the SDK's standard retry (tickwork.aws.clients CLIENT_CONFIG), and the resend's condition fails: its own
write moved the item. `store/conditional.Table` reads the write's token in the item the failed condition returned,
so the write counts as won, not lost, and the caller does not make it again (docs/architecture.md, "Lost answers").

The loss is played by a `before-send` hook registered last (after moto's, at its level: botocore calls a more specific
event's handlers first): moto has carried out the request when the hook raises botocore's ConnectionClosedError, which
the SDK retries. Its backoff is not slept."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import botocore.endpoint
import pytest
from botocore.exceptions import ConnectionClosedError
from tickwork.aws.clients import CLIENT_CONFIG
from tickwork.control.api_bodies import JobUpdate, TriggerRequest
from tickwork.model.policies import Band, Debounce
from tickwork.model.states import JobState, RunStatus
from tickwork.store.codec import run_key
from tickwork.store.pending_audits import MARKER

from tests.harness import TENANT, Pipeline
from tests.integration.test_audited_writes_without_transactions import BY, item_of_key, listed
from tests.integration.test_breaker_pipeline import _execute, _failing_job, _job
from tests.integration.test_expiry_sweep import STRONG

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


class _NoBackoff:
    """botocore's endpoint `time`, whose sleep between retries returns at once."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def sleep(self, seconds: float) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.endpoint, "time", _NoBackoff(botocore.endpoint.time))


@contextmanager
def answer_lost(
    client: Any,
    operation: str,
    matches: Callable[[dict[str, Any]], bool],
    meanwhile: Callable[[], object] = lambda: None,
) -> Iterator[list[dict[str, Any]]]:
    """The first `operation` request whose body `matches` is carried out by moto, then (after `meanwhile`) its
    answer is lost; the SDK's retry goes through. Yields the matching requests' bodies sent meanwhile."""
    sent: list[dict[str, Any]] = []

    def lose(request: Any, **_: Any) -> None:
        if request.headers.get("X-Amz-Target", b"") != f"DynamoDB_20120810.{operation}".encode():
            return
        body = json.loads(request.body)
        if matches(body):
            sent.append(body)
            if len(sent) == 1:
                meanwhile()
                raise ConnectionClosedError(endpoint_url=request.url)

    client.meta.events.register_last("before-send", lose)
    try:
        yield sent
    finally:
        client.meta.events.unregister("before-send", lose)


def test_the_clients_retry_a_lost_answer():
    # The test plays what the production clients do: standard retries, more than one attempt.
    assert CLIENT_CONFIG.retries["mode"] == "standard"
    assert CLIENT_CONFIG.retries["total_max_attempts"] > 1


@pytest.mark.parametrize("collect", [True, False])
def test_a_join_applied_whose_answer_was_lost_is_made_once(pipeline, collect):
    job = pipeline.create_job(schedule={"cron": "0 0 1 1 *"})
    debounce = Debounce(key="customer-7", seconds=30, collect=collect)
    triggers = pipeline.services.jobs.debounced
    first, _ = triggers.trigger(job, debounce, {"n": 1})
    client = pipeline.services.store.shared_table.client
    with answer_lost(client, "UpdateItem", lambda body: "payload_json" in body["UpdateExpression"]) as sent:
        joined, verdict = triggers.trigger(job, debounce, {"n": 2})
    assert (verdict, joined.id) == ("joined", first.id)
    run = pipeline.run(first.id)
    assert run.payload == ({"payloads": [{"n": 1}, {"n": 2}]} if collect else {"n": 2})
    assert run.debounce is not None
    assert run.debounce.triggers == 2
    assert len(sent) == 2  # applied, its answer lost, sent again by the SDK; not joined again
    assert joined.payload == run.payload


def test_a_join_lost_while_another_trigger_joined_is_made_once(pipeline):
    job = pipeline.create_job(schedule={"cron": "0 0 1 1 *"})
    debounce = Debounce(key="k", seconds=30, collect=True)
    triggers = pipeline.services.jobs.debounced
    first, _ = triggers.trigger(job, debounce, {"n": 1})
    client = pipeline.services.store.shared_table.client
    joins = lambda body: "payload_json" in body["UpdateExpression"]  # noqa: E731
    with answer_lost(client, "UpdateItem", joins, meanwhile=lambda: triggers.trigger(job, debounce, {"n": 3})):
        triggers.trigger(job, debounce, {"n": 2})
    run = pipeline.run(first.id)
    # The resend's condition saw the third trigger's join after this one's: this one's token is still on the run.
    assert run.payload == {"payloads": [{"n": 1}, {"n": 2}, {"n": 3}]}
    assert run.debounce.triggers == 3


def _put_of(sort_key_prefix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: body["Item"]["sk"]["S"].startswith(sort_key_prefix)


def test_a_window_opened_whose_answer_was_lost_is_started_by_its_trigger(pipeline):
    job = pipeline.create_job(schedule={"cron": "0 0 1 1 *"})
    client = pipeline.services.store.shared_table.client
    with answer_lost(client, "PutItem", _put_of("DEBOUNCE#")) as sent:
        run, verdict = pipeline.services.jobs.debounced.trigger(job, Debounce(key="k", seconds=30), {"n": 1})
    assert verdict == "started"  # not "joined" to a window it opened itself
    assert len(sent) == 2
    assert pipeline.run(run.id).debounce.triggers == 1


def test_a_windows_run_created_whose_answer_was_lost_carries_its_payload_once(pipeline):
    job = pipeline.create_job(schedule={"cron": "0 0 1 1 *"})
    client = pipeline.services.store.shared_table.client
    debounce = Debounce(key="k", seconds=30, collect=True)
    with answer_lost(client, "PutItem", _put_of("RUN#")) as sent:
        run, verdict = pipeline.services.jobs.debounced.trigger(job, debounce, {"n": 1})
    assert verdict == "started"
    stored = pipeline.run(run.id)
    assert stored.payload == {"payloads": [{"n": 1}]}
    assert stored.debounce.triggers == 1
    assert len(sent) == 2  # created, its answer lost, sent again by the SDK; not joined after


@pytest.fixture
def strong_pipeline(mocked_aws: None) -> Iterator[Any]:
    """RegionMode strong: an audited write is made without a transaction (tickwork.store.pending_audits)."""
    with Pipeline.create(parameters=STRONG) as p:
        yield p


def test_an_audited_join_without_transactions_whose_answer_was_lost_is_made_and_audited_once(strong_pipeline):
    pipeline = strong_pipeline
    job = pipeline.create_job(schedule={"cron": "0 0 1 1 *"})
    asked = TriggerRequest.model_validate({"debounce": {"key": "k", "seconds": 30, "collect": True}, "payload": {}})
    trigger = pipeline.services.jobs.trigger
    first = trigger(TENANT, job.id, asked.model_copy(update={"payload": {"n": 1}}), by=BY)
    client = pipeline.services.store.shared_table.client
    marked_join = lambda body: "payload_json" in body["UpdateExpression"] and MARKER in body["UpdateExpression"]  # noqa: E731
    with answer_lost(client, "UpdateItem", marked_join) as sent:
        joined = trigger(TENANT, job.id, asked.model_copy(update={"payload": {"n": 2}}), by=BY)
    assert joined.debounce_window == "joined"
    run = pipeline.run(first.id)
    assert run.payload == {"payloads": [{"n": 1}, {"n": 2}]}
    assert run.debounce.triggers == 2
    assert len(sent) == 2
    # Its record confirmed and listed with the first trigger's, and the run's mark cleared: it happened, once.
    assert listed(pipeline) == [("job.trigger", first.id)] * 2
    assert MARKER not in item_of_key(pipeline, run_key(first.id))


def test_a_probe_elected_whose_answer_was_lost_runs_as_the_probe(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 60})
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED  # opens until 12:02; 12:02 queued at create
    pipeline.services.jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"fail": False}}))
    client = pipeline.services.store.shared_table.client
    elects = lambda body: "breaker.probe_at = :probe" in body["UpdateExpression"]  # noqa: E731
    with answer_lost(client, "UpdateItem", elects) as sent:
        assert _execute(pipeline, job.id, 2) is RunStatus.SUCCEEDED  # the probe, not held back by its own election
    assert len(sent) == 2
    closed = _job(pipeline, job.id)
    assert (closed.state, closed.breaker) == (JobState.ACTIVE, None)


def test_a_failure_counted_whose_answer_was_lost_is_counted_once(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 2, "cooldown_seconds": 60})
    client = pipeline.services.store.shared_table.client
    counts = lambda body: "consecutive_failures = if_not_exists" in body["UpdateExpression"]  # noqa: E731
    with answer_lost(client, "UpdateItem", counts) as sent:
        assert _execute(pipeline, job.id, 1) is RunStatus.FAILED
    assert len(sent) == 2
    counted = _job(pipeline, job.id)
    assert (counted.state, counted.consecutive_failures) == (JobState.ACTIVE, 1)  # one failure: not opened


def test_a_lease_taken_whose_answer_was_lost_runs_the_run_once(pipeline):
    job = pipeline.create_job(schedule={"cron": "0 0 1 1 *"}, retry={"max_attempts": 1})
    run = pipeline.services.jobs.trigger(TENANT, job.id)
    [message] = pipeline.receive(Band.NORMAL)
    client = pipeline.services.store.shared_table.client
    leases = lambda body: "lease_owner = :owner" in body["UpdateExpression"]  # noqa: E731
    with answer_lost(client, "UpdateItem", leases) as sent:
        pipeline.deliver(Band.NORMAL, [message])
    assert len(sent) == 2
    ran = pipeline.run(run.id)
    # Its own lease, not another executor's: it ran now, one attempt (not held until the lease lapsed, then FAILED
    # with its one attempt spent by the lease it never used).
    assert (ran.status, ran.attempts) == (RunStatus.SUCCEEDED, 1)
    assert len(ran.attempt_history) == 1


def test_an_outcome_recorded_whose_answer_was_lost_is_settled(pipeline):
    at = pipeline.clock.now() + timedelta(minutes=5)
    job = pipeline.create_job(schedule={"at": at})
    pipeline.clock.set(at)
    assert pipeline.tick()["dispatched"] == 1
    client = pipeline.services.store.shared_table.client
    finishes = lambda body: "REMOVE lease_owner" in body["UpdateExpression"]  # noqa: E731
    with answer_lost(client, "UpdateItem", finishes) as sent:
        assert pipeline.drain() == 1
    assert len(sent) == 2
    [run] = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    # Its outcome read as recorded (not as a lease lost): what follows it ran, and completed the one-shot job.
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED
