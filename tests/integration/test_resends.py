"""Re-sends of claimed runs whose message is gone, against a band's backlog (issue 11: found by the soak).

A message can vanish for 90 minutes (received by an executor that died before changing its visibility); only
the tick's re-send brings its run. Holding the re-send back is right only while the band's backlog could hold
the run's message: a steady trickle of waiting messages must not delay it, and a real backlog only briefly.
A re-sent message is looked after as the first was, whatever the run's age (issue 25: a run whose re-sends were
spaced by its age started 24 minutes late in the full soak).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from tickwork.faults import CrashPoint
from tickwork.model.ids import ItemKind, run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus
from tickwork.store import DueItem
from tickwork.tick.resender import RESEND_DEFER_LIMIT

from tests.faults.crashes import ProcessKilled
from tests.harness import START


def _claimed_with_its_message_lost(pipeline: Any, count: int) -> list[str]:
    """`count` one-shots due at START + 60 s, claimed by a tick, their messages then lost."""
    jobs = [pipeline.create_job(schedule={"at": START + timedelta(seconds=60)}) for _ in range(count)]
    pipeline.tick()
    pipeline.sqs.purge_queue(QueueUrl=pipeline.resources.queue_urls[Band.NORMAL.value])
    return [run_id_for(job.id, job.next_run_at) for job in jobs]


def _waiting(pipeline: Any, count: int) -> None:
    """Other messages waiting in the normal band: a backlog of `count`."""
    url = pipeline.resources.queue_urls[Band.NORMAL.value]
    for _ in range(count):
        pipeline.sqs.send_message(QueueUrl=url, MessageBody="{}")


def test_a_trickle_of_waiting_messages_does_not_hold_back_a_re_send(pipeline):
    run_ids = _claimed_with_its_message_lost(pipeline, 3)
    _waiting(pipeline, 2)  # fewer than the overdue runs: their messages cannot all be in it
    pipeline.clock.advance(95)  # 35 s past their time, past the 30 s re-send time
    report = pipeline.tick()
    assert report["redispatched"] == 3
    pipeline.drain()
    assert {pipeline.run(r).status for r in run_ids} == {RunStatus.SUCCEEDED}


def test_a_backlog_that_could_hold_the_messages_holds_the_re_sends_back_two_minutes_at_most(pipeline):
    run_ids = _claimed_with_its_message_lost(pipeline, 2)
    _waiting(pipeline, 5)
    pipeline.clock.advance(95)
    assert pipeline.tick()["redispatched"] == 0  # deferred: the backlog may hold them
    pipeline.clock.advance(int(RESEND_DEFER_LIMIT.total_seconds()) + 30)  # the backlog is still there
    assert pipeline.tick()["redispatched"] == 2
    pipeline.drain()
    assert {pipeline.run(r).status for r in run_ids} == {RunStatus.SUCCEEDED}


def test_a_re_send_lost_with_its_tick_is_sent_again_by_the_next_tick(pipeline):
    """The tick moves the run's entry on before it sends: a tick that dies between the two must not leave the run
    waiting for a look spaced by its age (5 minutes at least), but for the re-send time, as after the first send."""
    (run_id,) = _claimed_with_its_message_lost(pipeline, 1)
    pipeline.clock.advance(95)
    pipeline.crashes.arm(CrashPoint.TICK_BEFORE_SEND)
    with pytest.raises(ProcessKilled):
        pipeline.tick()
    pipeline.crashes.disarm()
    assert sum(pipeline.queued_messages(b) for b in Band) == 0  # its entry moved on, no message sent
    pipeline.clock.advance(60)
    assert pipeline.tick()["redispatched"] == 1
    pipeline.drain()
    assert pipeline.run(run_id).status is RunStatus.SUCCEEDED


def test_a_re_send_into_a_backlog_is_repeated_once_per_defer_limit_not_every_tick(pipeline):
    run_ids = _claimed_with_its_message_lost(pipeline, 2)
    _waiting(pipeline, 5)
    pipeline.clock.advance(95)
    assert pipeline.tick()["redispatched"] == 0  # deferred: the backlog may hold them
    pipeline.clock.advance(150)
    assert pipeline.tick()["redispatched"] == 2  # the defer limit is over; the re-sends go into the backlog
    pipeline.clock.advance(60)
    assert pipeline.tick()["redispatched"] == 0  # the backlog may hold the re-sent messages: no duplicate yet
    pipeline.clock.advance(int(RESEND_DEFER_LIMIT.total_seconds()))
    assert pipeline.tick()["redispatched"] == 2  # not leased one defer limit later: lost again, re-sent again
    pipeline.drain()
    assert {pipeline.run(r).status for r in run_ids} == {RunStatus.SUCCEEDED}


def _parked_retry(pipeline: Any, *, retry_in: timedelta) -> str:
    """A claimed run whose first attempt failed with a backoff too long for a message: parked in the due index
    at its retry time, `retry_in` from now, with no message anywhere."""
    (run_id,) = _claimed_with_its_message_lost(pipeline, 1)
    store, now = pipeline.services.store, pipeline.clock.now()
    lease = store.leases.lease_run(run_id, owner="executor", now=now, lease_for=timedelta(minutes=5))
    assert lease.run is not None
    retry_at = now + retry_in
    finished = store.leases.finish_run(
        lease.run, owner="executor", status=RunStatus.RETRYING, now=now, not_before=retry_at, resend_at=retry_at
    )
    assert finished.recorded
    return run_id


def test_a_parked_retry_within_the_horizon_is_sent_ahead_of_its_time(pipeline):
    """The due index does not carry a run's status (its lease would rewrite the entry): a parked retry not yet
    due is told from the other runs' entries by its `not_before`, and read with its status."""
    run_id = _parked_retry(pipeline, retry_in=timedelta(seconds=90))
    pipeline.calls.clear()
    assert pipeline.tick()["redispatched"] == 1
    (sent,) = [e for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]
    assert json.loads(sent["MessageBody"])["run_id"] == run_id
    assert 85 <= sent["DelaySeconds"] <= 90  # sent now, to start at its time


def test_a_run_leased_when_its_entry_comes_due_is_not_sent_again(pipeline):
    """The entry still says nothing of the lease taken after the claim; the tick reads the run's status and
    lease, and moves the entry to the lease's end (plus the re-send delay) instead of re-sending."""
    (run_id,) = _claimed_with_its_message_lost(pipeline, 1)
    store = pipeline.services.store
    lease = store.leases.lease_run(run_id, owner="executor", now=pipeline.clock.now(), lease_for=timedelta(minutes=30))
    assert lease.outcome.value == "LEASED"
    pipeline.clock.advance(95)  # past the run's re-send time, the lease still live
    assert pipeline.tick()["redispatched"] == 0
    assert sum(pipeline.queued_messages(b) for b in Band) == 0
    assert pipeline.run(run_id).status is RunStatus.RUNNING


def test_an_entry_a_paged_read_returned_twice_is_read_with_its_status_not_refused(pipeline):
    """A tick reads a shard's entries page by page (200 a Query) before it reads their runs' status in one
    BatchGetItem per 100; an entry whose due time moves on between two pages (a re-send, an outcome, a deferral)
    is returned by both. BatchGetItem refuses a request naming a key twice, which failed the whole tick."""
    (run_id,) = _claimed_with_its_message_lost(pipeline, 1)
    due = pipeline.services.store.due
    far = int((pipeline.clock.now() + timedelta(days=1)).timestamp() * 1000)
    (entry,) = [
        i for s in range(pipeline.services.store.shards) for i in due.query_due(str(s), far) if i.kind is ItemKind.RUN
    ]
    assert entry.attrs["run_id"] == run_id
    moved = DueItem(entry.kind, entry.shard, entry.due_at + 60_000, entry.attrs)
    read = due.with_current_status([entry, moved])
    assert [(i.due_at, i.attrs["status"]) for i in read] == [(entry.due_at, "QUEUED"), (moved.due_at, "QUEUED")]
