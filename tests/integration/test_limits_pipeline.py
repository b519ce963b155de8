"""Concurrency keys, rate limits per key and the tenant's concurrency quota, through the real pipeline (moto):
runs over a limit are deferred without consuming an attempt, and the limits hold across racing executors."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from itertools import pairwise
from typing import Any

import pytest
from tickwork.faults import CrashPoint
from tickwork.model.clock import to_ms
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.model.states import DeferReason, RunStatus
from tickwork.model.tenant_settings import TenantSettings
from tickwork.observability import logger
from tickwork.store import LimitRecords, rate_sort, semaphore_sort

from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT, Pipeline
from tests.testing_jobtypes import GATE

FAR = timedelta(seconds=300)
LEASE_SECONDS = 60


@pytest.fixture(autouse=True)
def open_gate() -> Iterator[None]:
    GATE.reset(opened=True)
    yield
    GATE.opened.set()  # never leave a handler waiting


def _due_jobs(pipeline: Pipeline, count: int, **spec: Any) -> list[Job]:
    at = pipeline.clock.now() + FAR
    jobs = [pipeline.create_job(name=f"limited {i}", type="gated", schedule={"at": at}, **spec) for i in range(count)]
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return jobs


def _runs(pipeline: Pipeline, jobs: list[Job]) -> list[Run]:
    return [run for job in jobs for run in pipeline.runs_of(job.id)]


def _wait_for(condition: Any, what: str) -> None:
    """Real concurrency: wait (on an event, at most 10 s) until the other threads got there."""
    idle = threading.Event()
    for _ in range(500):
        if condition():
            return
        idle.wait(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _deliver_until_done(pipeline: Pipeline, messages: list[dict[str, Any]], *, max_rounds: int = 40) -> int:
    """Deliver what is left, then move the fake clock by the longest wait the executor set, until nothing is
    left. Returns the rounds it took."""
    for round_ in range(1, max_rounds + 1):
        pipeline.deliver(Band.NORMAL, messages)
        messages = list(pipeline._last_failed)
        if not messages:
            return round_
        waits = [pipeline.visibility_set_for(m["ReceiptHandle"])[-1] for m in messages]
        pipeline.clock.advance(max(waits))
    raise AssertionError("runs did not finish")


def test_a_key_with_limit_2_never_has_more_than_2_runs_inside_across_racing_executors(pipeline):
    jobs = _due_jobs(pipeline, 5, concurrency={"key": "stripe", "limit": 2})
    messages = pipeline.receive(Band.NORMAL)
    assert len(messages) == 5
    GATE.reset(opened=False)
    # One batch: the executor's batch processor runs its five records in five threads at once, all racing
    # for the key's two slots through conditional writes.
    racing = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, messages))
    racing.start()
    _wait_for(lambda: GATE.inside == 2, "two runs inside")
    _wait_for(lambda: sum(r.deferred for r in _runs(pipeline, jobs)) == 3, "three runs deferred")
    holders = LimitRecords(pipeline.services.store.shared_table).holders(TENANT, semaphore_sort("stripe"))
    assert len(holders) == 2
    GATE.opened.set()
    racing.join(timeout=30)
    assert GATE.most == 2

    rounds = _deliver_until_done(pipeline, list(pipeline._last_failed))
    runs = _runs(pipeline, jobs)
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 5
    assert GATE.most == 2
    assert all(r.attempts == 1 for r in runs)  # a deferral never consumes an attempt
    deferred = [r for r in runs if r.deferred > 0]
    assert len(deferred) == 3
    assert {r.deferred_reason for r in deferred} == {DeferReason.CONCURRENCY_KEY}
    assert rounds >= 2
    # Every slot was given back.
    assert LimitRecords(pipeline.services.store.shared_table).holders(TENANT, semaphore_sort("stripe")) == {}


def test_two_tenants_same_key_name_are_different_keys(pipeline):
    acme = _due_jobs(pipeline, 1, concurrency={"key": "stripe", "limit": 1})
    pipeline.create_job(tenant="globex", name="other", type="gated", schedule={"at": START + 2 * FAR})
    globex_job = pipeline.create_job(
        tenant="globex",
        name="theirs",
        type="gated",
        schedule={"at": START + 2 * FAR},
        concurrency={"key": "stripe", "limit": 1},
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    GATE.reset(opened=False)
    messages = pipeline.receive(Band.NORMAL)
    acme_message = [m for m in messages if acme[0].id in m["Body"]]
    globex_message = [m for m in messages if globex_job.id in m["Body"]]
    holding = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, acme_message))
    holding.start()
    _wait_for(lambda: GATE.inside == 1, "acme's run inside")
    other = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, globex_message))
    other.start()
    _wait_for(lambda: GATE.inside == 2, "globex's run inside beside acme's")
    GATE.opened.set()
    holding.join(timeout=30)
    other.join(timeout=30)
    assert pipeline.runs_of(acme[0].id)[0].status is RunStatus.SUCCEEDED
    assert pipeline.runs_of(globex_job.id)[0].status is RunStatus.SUCCEEDED
    assert pipeline.runs_of(globex_job.id)[0].deferred == 0


def test_a_crashed_holder_frees_its_slot_when_its_lease_ends_and_the_waiting_run_then_runs(pipeline):
    first, second = _due_jobs(pipeline, 2, concurrency={"key": "ledger", "limit": 1})
    messages = {m["Body"]: m for m in pipeline.receive(Band.NORMAL)}
    first_message = next(m for body, m in messages.items() if first.id in body)
    second_message = next(m for body, m in messages.items() if second.id in body)
    pipeline.crashes.arm(CrashPoint.EXECUTOR_BEFORE_FINISH)
    with pytest.raises(ProcessKilled):
        pipeline.deliver(Band.NORMAL, [first_message])
    pipeline.crashes.disarm()
    limits = LimitRecords(pipeline.services.store.shared_table)
    assert len(limits.holders(TENANT, semaphore_sort("ledger"))) == 1  # the dead executor released nothing

    pipeline.deliver(Band.NORMAL, [second_message])
    waiting = pipeline.runs_of(second.id)[0]
    assert waiting.status is RunStatus.QUEUED
    assert (waiting.attempts, waiting.deferred, waiting.deferred_reason) == (0, 1, DeferReason.CONCURRENCY_KEY)

    pipeline.clock.advance(LEASE_SECONDS + 1)  # the dead holder's lease, and with it its hold, has ended
    pipeline.deliver(Band.NORMAL, [second_message])
    finished = pipeline.runs_of(second.id)[0]
    assert finished.status is RunStatus.SUCCEEDED
    assert finished.attempts == 1
    # The crashed run's message comes back: its result was written before the crash, so it is recorded.
    pipeline.deliver(Band.NORMAL, [first_message])
    assert pipeline.runs_of(first.id)[0].status is RunStatus.SUCCEEDED
    assert limits.holders(TENANT, semaphore_sort("ledger")) == {}


def test_a_run_longer_than_its_lease_keeps_its_slot_through_heartbeats(pipeline):
    """The heartbeat extends the hold with the lease: a run that outlives its first lease is not overtaken."""
    pipeline.create_job(
        name="long",
        type="gated",
        payload={"sleep": 2 * LEASE_SECONDS},
        schedule={"at": START + FAR},
        concurrency={"key": "slow", "limit": 1},
    )
    (short,) = _due_jobs(pipeline, 1, concurrency={"key": "slow", "limit": 1})
    messages = pipeline.receive(Band.NORMAL)
    long_message = next(m for m in messages if short.id not in m["Body"])
    short_message = next(m for m in messages if short.id in m["Body"])
    GATE.reset(opened=False)
    holding = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [long_message]))
    holding.start()
    # Inside, and past its sleep: the fake clock has moved two leases on, beating every third of one.
    _wait_for(lambda: GATE.inside == 1 and pipeline.clock.now() >= START + FAR + timedelta(seconds=120), "long run")
    (hold_end,) = LimitRecords(pipeline.services.store.shared_table).holders(TENANT, semaphore_sort("slow")).values()
    assert hold_end > to_ms(pipeline.clock.now())
    pipeline.deliver(Band.NORMAL, [short_message])
    assert len(GATE.starts) == 1  # the short run did not start
    waiting = pipeline.runs_of(short.id)[0]
    assert (waiting.status, waiting.deferred_reason) == (RunStatus.QUEUED, DeferReason.CONCURRENCY_KEY)
    GATE.opened.set()
    holding.join(timeout=30)
    pipeline.clock.advance(2)
    pipeline.deliver(Band.NORMAL, [short_message])
    assert pipeline.runs_of(short.id)[0].status is RunStatus.SUCCEEDED
    assert GATE.most == 1


def _a_starved_holder_and_the_run_that_took_its_slot(
    pipeline: Pipeline, holder: dict[str, Any], taker: dict[str, Any]
) -> None:
    """The holder's handler waits at the gate without a beat (a starved process, or beats that all failed) for
    longer than a lease, so its slot lapses; the taker is delivered meanwhile and goes in. Then the gate opens
    and the holder beats again (its `sleep_after`): its lease is still its own, as nobody took its run over."""
    GATE.reset(opened=False)
    starved = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [holder]))
    starved.start()
    _wait_for(lambda: GATE.inside == 1, "the holder inside")
    pipeline.clock.advance(LEASE_SECONDS + 1)
    taking = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [taker]))
    taking.start()
    _wait_for(lambda: GATE.inside == 2, "the taker inside beside the starved holder")
    GATE.opened.set()
    starved.join(timeout=30)
    taking.join(timeout=30)


def test_a_late_heartbeat_that_finds_its_concurrency_slot_taken_stops_the_run_and_records_why(pipeline):
    holder_job, taker_job = _due_jobs(
        pipeline, 2, payload={"sleep_after": 60}, concurrency={"key": "ledger", "limit": 1}
    )
    messages = pipeline.receive(Band.NORMAL)
    holder = next(m for m in messages if holder_job.id in m["Body"])
    taker = next(m for m in messages if taker_job.id in m["Body"])
    _a_starved_holder_and_the_run_that_took_its_slot(pipeline, holder, taker)

    assert pipeline.runs_of(taker_job.id)[0].status is RunStatus.SUCCEEDED
    stopped = pipeline.runs_of(holder_job.id)[0]
    assert stopped.status is RunStatus.RETRYING  # not run on beside the taker to its end
    assert stopped.error is not None
    assert stopped.error.type == "SlotLost"
    assert "concurrency key 'ledger'" in stopped.error.message
    # Its retry is admitted afresh, like any run's.
    _deliver_until_done(pipeline, [holder])
    assert (pipeline.runs_of(holder_job.id)[0].status, pipeline.runs_of(holder_job.id)[0].attempts) == (
        RunStatus.SUCCEEDED,
        2,
    )
    assert LimitRecords(pipeline.services.store.shared_table).holders(TENANT, semaphore_sort("ledger")) == {}


def test_a_late_heartbeat_that_finds_its_overlap_running_slot_taken_stops_the_run_and_records_why(pipeline):
    job = pipeline.create_job(
        name="one at a time", type="gated", payload={"sleep_after": 60}, schedule={"at": START + FAR}, overlap="SKIP"
    )
    first = pipeline.services.jobs.trigger(TENANT, job.id)
    pipeline.clock.advance(1)
    second = pipeline.services.jobs.trigger(TENANT, job.id)
    messages = pipeline.receive(Band.NORMAL)
    holder = next(m for m in messages if first.id in m["Body"])
    taker = next(m for m in messages if second.id in m["Body"])
    _a_starved_holder_and_the_run_that_took_its_slot(pipeline, holder, taker)

    assert pipeline.run(second.id).status is RunStatus.SUCCEEDED
    stopped = pipeline.run(first.id)
    assert stopped.status is RunStatus.RETRYING
    assert stopped.error is not None
    assert stopped.error.type == "SlotLost"
    assert "running slot" in stopped.error.message


def test_the_tenant_max_concurrent_runs_holds_its_runs_to_the_quota(pipeline):
    pipeline.services.tenant_records.put_settings(TENANT, TenantSettings(max_concurrent_runs=1), START)
    jobs = _due_jobs(pipeline, 3)
    messages = pipeline.receive(Band.NORMAL)
    GATE.reset(opened=False)
    racing = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, messages))
    racing.start()
    _wait_for(lambda: GATE.inside == 1, "one run inside")
    _wait_for(lambda: sum(r.deferred for r in _runs(pipeline, jobs)) == 2, "two runs deferred")
    GATE.opened.set()
    racing.join(timeout=30)
    _deliver_until_done(pipeline, list(pipeline._last_failed))
    runs = _runs(pipeline, jobs)
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 3
    assert GATE.most == 1
    assert all(r.attempts == 1 for r in runs)
    assert {r.deferred_reason for r in runs if r.deferred} == {DeferReason.TENANT_CONCURRENCY}


def test_a_rate_limit_starts_runs_no_faster_than_the_rate_and_lateness_keeps_counting(pipeline):
    jobs = _due_jobs(pipeline, 4, rate_limit={"key": "sms", "per_minute": 6})
    _deliver_until_done(pipeline, pipeline.receive(Band.NORMAL))
    runs = _runs(pipeline, jobs)
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 4
    starts = sorted(GATE.starts.values())
    # 6 a minute: one every 10 s, each refused run told exactly when its turn comes.
    assert [(b - a).total_seconds() for a, b in pairwise(starts)] == [10.0, 10.0, 10.0]
    assert sorted(r.lateness_ms or 0 for r in runs) == [0, 10_000, 20_000, 30_000]
    assert all(r.attempts == 1 for r in runs)
    assert sorted(r.deferred for r in runs) == [0, 1, 2, 3]
    assert {r.deferred_reason for r in runs if r.deferred} == {DeferReason.RATE_LIMIT}


def test_a_duplicate_message_of_a_deferred_run_is_refused_until_its_wait_ends(pipeline):
    (job,) = _due_jobs(pipeline, 1, rate_limit={"key": "sms", "per_minute": 1})
    limits = LimitRecords(pipeline.services.store.shared_table)
    limits.admit_rate(TENANT, rate_sort("sms"), interval_ms=60_000, now=pipeline.clock.now())  # someone went first
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    deferred = pipeline.runs_of(job.id)[0]
    assert deferred.not_before == pipeline.clock.now() + timedelta(seconds=60)
    assert pipeline.visibility_set_for(messages[0]["ReceiptHandle"])[-1] == 60
    pipeline.clock.advance(30)
    pipeline.deliver(Band.NORMAL, messages)  # a duplicate, early: not leased
    assert pipeline.runs_of(job.id)[0].model_dump() == deferred.model_dump()
    pipeline.clock.advance(30)
    pipeline.deliver(Band.NORMAL, messages)
    assert pipeline.runs_of(job.id)[0].status is RunStatus.SUCCEEDED


def test_a_lost_message_of_a_deferred_run_is_re_sent_by_the_tick(pipeline):
    (job,) = _due_jobs(pipeline, 1, concurrency={"key": "k", "limit": 1})
    limits = LimitRecords(pipeline.services.store.shared_table)
    now = pipeline.clock.now()
    assert limits.acquire(TENANT, semaphore_sort("k"), holder="other", limit=1, until=now + FAR, now=now)
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    assert pipeline.runs_of(job.id)[0].deferred == 1
    pipeline.sqs.delete_message(
        QueueUrl=pipeline.resources.queue_urls[Band.NORMAL.value], ReceiptHandle=messages[0]["ReceiptHandle"]
    )
    limits.release(TENANT, semaphore_sort("k"), holder="other")
    for _ in range(10):
        pipeline.clock.advance(60)
        pipeline.tick()
        resent = pipeline.receive(Band.NORMAL, 1)
        if resent:
            break
    else:
        raise AssertionError("the tick never re-sent the deferred run")
    pipeline.deliver(Band.NORMAL, resent)
    assert pipeline.runs_of(job.id)[0].status is RunStatus.SUCCEEDED


def test_a_workflow_step_carries_its_concurrency_key(pipeline):
    from tickwork.control.api_bodies import WorkflowSpec

    spec = WorkflowSpec.model_validate(
        {
            "name": "wf",
            "schedule": {"at": START + FAR},
            "steps": [{"id": "pay", "type": "gated", "concurrency": {"key": "stripe", "limit": 1}}],
        }
    )
    pipeline.services.workflows.create(TENANT, spec)
    limits = LimitRecords(pipeline.services.store.shared_table)
    now = pipeline.clock.now() + FAR
    limits.acquire(TENANT, semaphore_sort("stripe"), holder="other", limit=1, until=now + FAR, now=now)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    messages = pipeline.receive(Band.NORMAL)
    assert len(messages) == 1
    pipeline.deliver(Band.NORMAL, messages)
    assert GATE.starts == {}  # held back by the key another holds
    limits.release(TENANT, semaphore_sort("stripe"), holder="other")
    pipeline.clock.advance(60)
    pipeline.deliver(Band.NORMAL, messages)
    assert len(GATE.starts) == 1


def _calls_of_one_delivery(pipeline: Pipeline, message: dict[str, Any]) -> dict[str, int]:
    pipeline.calls.clear()
    pipeline.deliver(Band.NORMAL, [message])
    return dict(pipeline.calls.by_operation())


def test_a_run_without_a_key_or_quota_makes_no_more_aws_calls_than_before(pipeline):
    jobs = _due_jobs(pipeline, 2)
    first, second = pipeline.receive(Band.NORMAL)
    executor = pipeline.services.executor
    limits = executor.limits
    pipeline.services.tenant_directory.settings_of(TENANT)  # warm: one BatchGetItem a tenant per 30 s, not per run
    pipeline.services.executor_freezes.recent()  # and one Query of the freezes per 5 s
    executor.limits = None  # as before limits existed
    try:
        before = _calls_of_one_delivery(pipeline, first)
    finally:
        executor.limits = limits
    after = _calls_of_one_delivery(pipeline, second)
    assert after == before
    assert [r.status for r in _runs(pipeline, jobs)] == [RunStatus.SUCCEEDED] * 2


def test_what_a_key_and_a_rate_cost_per_run(pipeline):
    plain = _due_jobs(pipeline, 1)
    pipeline.services.tenant_directory.settings_of(TENANT)
    base = _calls_of_one_delivery(pipeline, pipeline.receive(Band.NORMAL)[0])
    assert pipeline.runs_of(plain[0].id)[0].status is RunStatus.SUCCEEDED
    _due_jobs(pipeline, 1, concurrency={"key": "k", "limit": 3}, rate_limit={"key": "r", "per_second": 5})
    pipeline.services.tenant_directory.settings_of(TENANT)  # the clock moved past the cache's 30 s
    limited = _calls_of_one_delivery(pipeline, pipeline.receive(Band.NORMAL)[0])
    extra = {op: limited.get(op, 0) - base.get(op, 0) for op in set(base) | set(limited)}
    # The semaphore: a consistent read and one conditional put to take the slot, one update to give it back;
    # the rate: one conditional update.
    assert {op: n for op, n in extra.items() if n} == {"GetItem": 1, "PutItem": 1, "UpdateItem": 2}


def test_a_deferred_run_of_an_overlap_skip_job_gives_the_jobs_running_slot_back(pipeline):
    (job,) = _due_jobs(pipeline, 1, overlap="SKIP", concurrency={"key": "k", "limit": 1})
    limits = LimitRecords(pipeline.services.store.shared_table)
    now = pipeline.clock.now()
    assert limits.acquire(TENANT, semaphore_sort("k"), holder="other", limit=1, until=now + FAR, now=now)
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    assert pipeline.runs_of(job.id)[0].deferred_reason is DeferReason.CONCURRENCY_KEY
    item = pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key={"pk": {"S": f"JOB#{job.id}"}, "sk": {"S": "JOB"}}
    )["Item"]
    assert "running_run" not in item
    assert GATE.starts == {}


def test_a_deferral_emits_runs_deferred_with_its_reason_and_logs_the_run(pipeline, monkeypatch, capsys, caplog):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    (job,) = _due_jobs(pipeline, 1, rate_limit={"key": "sms", "per_minute": 1})
    LimitRecords(pipeline.services.store.shared_table).admit_rate(
        TENANT, rate_sort("sms"), interval_ms=60_000, now=pipeline.clock.now()
    )
    capsys.readouterr()
    caplog.set_level(logging.INFO, logger=logger.name)
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    (emf,) = [line for line in emitted if "RunsDeferred" in line and "Reason" in line]  # not the tenant's (run_metrics)
    # As deployed (POWERTOOLS_SERVICE_NAME set), Powertools adds `service`: GET /v1/metrics reads it so.
    assert emf["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Reason", "service"]]
    assert (emf["Reason"], emf["service"], emf["RunsDeferred"]) == ("rate_limit", "tickwork", [1.0])
    run_id = pipeline.runs_of(job.id)[0].id
    assert any(getattr(r, "run_id", None) == run_id and "deferred" in r.getMessage() for r in caplog.records)


def test_what_a_deferral_costs(pipeline):
    (job,) = _due_jobs(pipeline, 1, concurrency={"key": "k", "limit": 1})
    now = pipeline.clock.now()
    LimitRecords(pipeline.services.store.shared_table).acquire(
        TENANT, semaphore_sort("k"), holder="other", limit=1, until=now + FAR, now=now
    )
    pipeline.services.tenant_directory.settings_of(TENANT)
    pipeline.services.executor_freezes.recent()
    calls = _calls_of_one_delivery(pipeline, pipeline.receive(Band.NORMAL)[0])
    assert pipeline.runs_of(job.id)[0].deferred == 1
    # The visibility before the lease and the message's wait; the lease and the deferral's write; the key's read
    # (full: nothing written to it). The job is not read: the message carries its copy (tickwork.model.run_spec).
    assert calls == {"ChangeMessageVisibility": 2, "UpdateItem": 2, "GetItem": 1}
