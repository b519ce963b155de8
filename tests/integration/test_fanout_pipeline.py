"""Dispatcher fan-out (issue 16, item 1) against moto: the tick hands its shards to dispatch workers through the
dispatch queue; racing workers, a killed worker and a killed coordinator keep every claim exactly-once and lose
nothing. Production settings (tick period, horizon, shard lease, re-send times), with the harness's 4 shards
(32 where the coordinator needs more than ten slices)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from tickwork.faults import CrashPoint
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus
from tickwork.store.codec import shard_of
from tickwork_local.runtime.lambda_runtime import failed_message_ids

from tests.faults.crashes import ProcessKilled
from tests.harness import START, Pipeline

FAR = timedelta(seconds=300)  # beyond the 120 s horizon: created jobs wait for a tick
PRODUCTION = {"REDISPATCH_AFTER_SECONDS": "30"}  # the template's value


@pytest.fixture
def fanned_out(mocked_aws: None) -> Iterator[Pipeline]:
    with Pipeline.create(DISPATCH_WORKERS="3", **PRODUCTION) as pipeline:
        yield pipeline


def _jobs_due_far(pipeline: Pipeline, count: int) -> list:
    return [pipeline.create_job(schedule={"at": START + FAR + timedelta(milliseconds=i)}) for i in range(count)]


def _sent_run_ids(pipeline: Pipeline) -> list[str]:
    return [
        json.loads(e["MessageBody"])["run_id"]
        for p in pipeline.calls.params("SendMessageBatch")
        if p["QueueUrl"] != pipeline.dispatch_queue_url
        for e in p["Entries"]
    ]


def _expected(jobs: list) -> list[str]:
    return [run_id_for(j.id, j.next_run_at) for j in jobs]


def test_a_fanned_out_tick_hands_one_slice_to_each_worker_and_the_workers_claim_every_shard(fanned_out):
    jobs = _jobs_due_far(fanned_out, 60)
    shards = Counter(int(shard_of(j.id, 4)) for j in jobs)
    assert len(shards) == 4  # the jobs are spread over every shard
    fanned_out.clock.advance(FAR.total_seconds() + 1)  # all due: sent without a delay (moto's are real time)

    result = fanned_out.tick()
    assert (result["slices_sent"], result["dispatched"]) == (3, 0)  # the coordinator claims nothing itself
    assert fanned_out.count_items(kind="RUN") == 0
    slices = [json.loads(e["MessageBody"]) for e in fanned_out.calls.params("SendMessageBatch")[0]["Entries"]]
    assert sorted((s["worker"], s["workers"]) for s in slices) == [(0, 3), (1, 3), (2, 3)]

    assert fanned_out.dispatch_all() == 3
    assert fanned_out.existing_runs(_expected(jobs)) == set(_expected(jobs))
    assert fanned_out.count_items(kind="RUN") == 60
    assert sorted(_sent_run_ids(fanned_out)) == sorted(_expected(jobs))
    assert fanned_out.drain() == 60
    assert {r.status for j in jobs for r in fanned_out.runs_of(j.id)} == {RunStatus.SUCCEEDED}
    assert len(fanned_out.result_objects()) == 60


def test_racing_workers_given_the_same_shards_claim_each_occurrence_once(fanned_out):
    """Two ticks' slices (a slow tick and the next, or a slice delivered twice) worked at the same instant by
    six workers on three threads each: every due job gets exactly one run and one message."""
    jobs = _jobs_due_far(fanned_out, 300)
    # All due: sent without a delay, so the queues' counts are stable (moto counts a message whose delay ends
    # between its "visible" and "delayed" counts in neither).
    fanned_out.clock.advance(FAR.total_seconds() + 1)
    fanned_out.tick()
    fanned_out.tick()
    messages = fanned_out.receive_slices() + fanned_out.receive_slices()
    assert len(messages) == 6
    barrier = threading.Barrier(len(messages))
    responses: list[dict] = []

    def work(message: dict) -> None:
        barrier.wait()
        responses.append(fanned_out.dispatch(message))

    threads = [threading.Thread(target=work, args=(m,)) for m in messages]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert all(not failed_message_ids(r) for r in responses)
    assert fanned_out.count_items(kind="RUN") == 300
    assert fanned_out.existing_runs(_expected(jobs)) == set(_expected(jobs))
    sent = _sent_run_ids(fanned_out)
    assert sorted(sent) == sorted(_expected(jobs))  # each once: the racing worker found the shard leased or done
    assert sum(fanned_out.queued_messages(b) for b in Band) == 300


def _run_minutes(pipeline: Pipeline, minutes: int) -> None:
    """Ticks, dispatch workers and executors each minute of fake time, as Lambda and the event sources would."""
    for _ in range(minutes):
        pipeline.tick()
        pipeline.dispatch_all()
        pipeline.drain()
        pipeline.clock.advance(60)


@pytest.mark.parametrize(
    "point", [CrashPoint.TICK_AFTER_RUN_PUT, CrashPoint.TICK_BEFORE_SEND, CrashPoint.TICK_AFTER_SEND]
)
def test_a_worker_killed_in_its_slice_loses_nothing_the_next_tick_retakes_its_shards(fanned_out, point):
    jobs = _jobs_due_far(fanned_out, 60)
    fanned_out.clock.advance(FAR.total_seconds() + 1)
    fanned_out.tick()
    first, *others = fanned_out.receive_slices()
    fanned_out.crashes.arm(point)
    with pytest.raises(ProcessKilled):
        fanned_out.dispatch(first)  # dies mid-slice: its message stays in flight, its shard leases held
    fanned_out.crashes.disarm()
    for message in others:
        fanned_out.dispatch(message)
    dead_slice = json.loads(first["Body"])  # whichever slice SQS handed out first: one of the tick's three
    assert (dead_slice["workers"], dead_slice["worker"] in (0, 1, 2)) == (3, True)

    _run_minutes(fanned_out, 8)

    for job in jobs:
        (run,) = fanned_out.runs_of(job.id)
        assert run.id == run_id_for(job.id, job.next_run_at)
        assert run.status is RunStatus.SUCCEEDED
        assert run.attempts == 1
    assert fanned_out.count_items(kind="RUN") == 60
    assert len(fanned_out.result_objects()) == 60
    assert fanned_out.crashes.kills == 1


def test_a_coordinator_killed_after_its_first_ten_slices_loses_no_run_and_makes_none_late(mocked_aws):
    """Twenty workers over 32 shards: the coordinator dies after one SendMessageBatch of ten. Those workers claim
    their shards; the other shards wait for the next tick, which, a minute later, still claims their runs before
    their time (claims look ahead 120 s)."""
    with Pipeline.create(DISPATCH_WORKERS="20", DUE_SHARDS="32", **PRODUCTION) as pipeline:
        jobs = [pipeline.create_job(schedule={"at": START + FAR + timedelta(milliseconds=i)}) for i in range(80)]
        pipeline.clock.advance((FAR - timedelta(seconds=100)).total_seconds())  # due in 100 s: inside the horizon
        pipeline.crashes.arm(CrashPoint.FANOUT_AFTER_SEND)
        with pytest.raises(ProcessKilled):
            pipeline.tick()
        pipeline.crashes.disarm()
        assert pipeline.dispatch_all() == 10
        claimed_first = {r.job_id for j in jobs for r in pipeline.runs_of(j.id)}
        owners = {int(shard_of(j.id, 32)) % 20 for j in jobs if j.id in claimed_first}
        assert owners
        assert owners <= set(range(10))
        assert 0 < len(claimed_first) < 80  # the other slices' jobs wait for the next tick

        pipeline.clock.advance(60)  # the next tick: 40 s before the runs' time
        assert pipeline.tick()["slices_sent"] == 20
        pipeline.dispatch_all()
        runs = [r for j in jobs for r in pipeline.runs_of(j.id)]
        assert sorted(r.id for r in runs) == sorted(_expected(jobs))
        assert pipeline.clock.now() < min(r.scheduled_for for r in runs)  # every run claimed ahead of its time
        assert sorted(_sent_run_ids(pipeline)) == sorted(_expected(jobs))  # and sent once


def test_a_stale_slice_is_dropped_and_a_malformed_one_fails_and_claims_nothing(fanned_out, caplog):
    jobs = _jobs_due_far(fanned_out, 8)
    fanned_out.clock.advance(FAR.total_seconds())
    fanned_out.tick()
    fanned_out.clock.advance(60)  # the slices arrive a whole tick late (a throttled event source)
    assert fanned_out.dispatch_all() == 3
    assert fanned_out.count_items(kind="RUN") == 0  # dropped: the next tick's slices cover the same shards
    assert fanned_out.receive_slices() == []  # and deleted, not retried

    fanned_out.sqs.send_message(QueueUrl=fanned_out.dispatch_queue_url, MessageBody='{"worker": 0, "workers": 2}')
    (message,) = fanned_out.receive_slices()
    response = fanned_out.dispatch(message)
    assert failed_message_ids(response) == {message["MessageId"]}
    assert fanned_out.count_items(kind="RUN") == 0
    (failure,) = [r for r in caplog.records if r.getMessage() == "dispatch slice failed"]
    assert "body.tick_at" in failure.error
    assert "Field required" in failure.error
    # Not retried: on its next receive SQS moves it to TickDeadLetterQueue (maxReceiveCount 1), the failed-tick alarm's.
    fanned_out.sqs.change_message_visibility(
        QueueUrl=fanned_out.dispatch_queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    assert fanned_out.receive_slices() == []
    dead = fanned_out.sqs.receive_message(QueueUrl=fanned_out.resources.extra_queue_urls["TickDeadLetterQueue"])
    assert [m["Body"] for m in dead["Messages"]] == ['{"worker": 0, "workers": 2}']

    fanned_out.tick()
    fanned_out.dispatch_all()
    assert fanned_out.existing_runs(_expected(jobs)) == set(_expected(jobs))
