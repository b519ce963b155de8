"""Fair share at dispatch against moto: weights under a capacity cut, aging, the tenant rate quota (at the tick
and at create), and what it costs in AWS calls."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Any

from tickwork.model.policies import Band
from tickwork.model.states import DeferReason, RunStatus
from tickwork.model.tenant_settings import TenantSettings
from tickwork.store.tenant_rates import TenantRates

from tests.harness import START, Pipeline

FAR = timedelta(seconds=300)  # beyond the 120 s horizon: created jobs wait for a tick


def set_tenant(pipeline: Pipeline, tenant: str, **settings: Any) -> None:
    pipeline.services.tenant_records.put_settings(tenant, TenantSettings(**settings), pipeline.clock.now())


def flood(pipeline: Pipeline, tenant: str, n: int, *, at: Any = None, priority: int = 5) -> list[str]:
    when = at or START + FAR
    return [pipeline.create_job(tenant, schedule={"at": when}, priority=priority).id for _ in range(n)]


def claimed(pipeline: Pipeline, job_ids: list[str]) -> int:
    return sum(1 for j in job_ids if pipeline.runs_of(j))


def sent_run_ids(pipeline: Pipeline) -> list[str]:
    return [
        json.loads(e["MessageBody"])["run_id"] for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]
    ]


def test_two_flooding_tenants_share_a_cut_tick_by_their_weights(mocked_aws: None) -> None:
    with Pipeline.create(MAX_DISPATCH_PER_TICK="20") as pipeline:
        set_tenant(pipeline, "heavy", weight=3)
        a, b = flood(pipeline, "heavy", 40), flood(pipeline, "light", 40)
        pipeline.clock.advance(FAR.total_seconds())

        report = pipeline.services.dispatcher.claim_due_runs()

        assert (claimed(pipeline, a), claimed(pipeline, b)) == (15, 5)
        assert report.dispatched == 20
        assert report.over_capacity == 60
        # Nothing lost: later ticks claim the rest, each once.
        for _ in range(4):
            pipeline.drain()
            pipeline.clock.advance(60)
            pipeline.tick()
        pipeline.drain()
        assert (claimed(pipeline, a), claimed(pipeline, b)) == (40, 40)
        assert {pipeline.runs_of(j)[0].status for j in a + b} == {RunStatus.SUCCEEDED}
        assert len(sent_run_ids(pipeline)) == len(set(sent_run_ids(pipeline))) == 80


def test_a_starving_low_band_run_is_lifted_by_aging_and_keeps_its_band_and_lateness(mocked_aws: None) -> None:
    with Pipeline.create(MAX_DISPATCH_PER_TICK="5", AGING_AFTER_SECONDS="120") as pipeline:
        high = flood(pipeline, "noisy", 60, priority=9)
        (low,) = flood(pipeline, "quiet", 1, priority=0)
        pipeline.clock.advance(FAR.total_seconds())
        for minute in range(5):  # overdue 0..240 s: at most one band up, still behind the high flood
            pipeline.tick()
            assert not pipeline.runs_of(low), minute
            pipeline.clock.advance(60)
        pipeline.tick()  # overdue 300 s > 2 x 120 s: it competes in the high band now

        (run,) = pipeline.runs_of(low)
        assert run.priority == 0  # its own band and queue
        assert run.scheduled_for == START + FAR  # its lateness counts from its own time
        assert claimed(pipeline, high) == 6 * 5 - 1
        messages = pipeline.receive(Band.LOW)
        assert [json.loads(m["Body"])["run_id"] for m in messages] == [run.id]


def test_a_tenant_at_ten_a_minute_gets_ten_claims_a_window_and_the_rest_later_deferred(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=10)
    metered = flood(pipeline, "metered", 25)
    other = flood(pipeline, "free", 5)
    pipeline.clock.advance(FAR.total_seconds())  # 12:05:00, the start of a window

    first = pipeline.services.dispatcher.claim_due_runs()
    assert claimed(pipeline, metered) == 10
    assert claimed(pipeline, other) == 5  # the free tenant is not held back by the other's quota
    assert first.held_back_rate == 15
    rates = TenantRates(pipeline.services.store.shared_table)
    assert rates.used("metered", pipeline.clock.now()) == 10
    again = pipeline.services.dispatcher.claim_due_runs()  # a second tick in the same window gets nothing more
    assert again.held_back_rate == 15
    assert claimed(pipeline, metered) == 10

    pipeline.clock.advance(60)
    assert pipeline.tick()["held_back_rate"] == 5
    assert claimed(pipeline, metered) == 20
    pipeline.clock.advance(60)
    assert pipeline.tick()["held_back_rate"] == 0
    assert claimed(pipeline, metered) == 25

    runs = [r for j in metered for r in pipeline.runs_of(j)]
    assert Counter((r.deferred, r.deferred_reason) for r in runs) == {
        (0, None): 10,
        (1, DeferReason.TENANT_RATE): 10,
        (2, DeferReason.TENANT_RATE): 5,
    }
    assert all(r.status is RunStatus.QUEUED for r in runs)
    assert pipeline.drain() == 30
    # Nothing lost or duplicated: one run and one message each, and every run succeeded once.
    assert len(sent_run_ids(pipeline)) == len(set(sent_run_ids(pipeline))) == 30
    assert all(pipeline.run(r.id).status is RunStatus.SUCCEEDED for r in runs)


def test_a_quota_caps_a_frequent_jobs_runs_not_just_its_claims(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=10)
    job = pipeline.create_job("metered", schedule={"rate": "1 second"}, priority=5)

    assert len(pipeline.runs_of(job.id)) == 10  # claimed at create, up to the quota
    assert pipeline.tick()["dispatched"] == 0  # same window: spent
    pipeline.clock.advance(60)
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    assert len(runs) == 20
    assert [r.scheduled_for for r in runs] == [runs[0].scheduled_for + timedelta(seconds=i) for i in range(20)]
    assert {r.deferred_reason for r in runs[10:]} == {DeferReason.TENANT_RATE}


def test_a_job_created_beyond_the_quota_waits_for_the_next_window(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=2)
    jobs = flood(pipeline, "metered", 3, at=START + timedelta(seconds=5))
    assert [len(pipeline.runs_of(j)) for j in jobs] == [1, 1, 0]  # the third is held back at create

    pipeline.clock.advance(30)
    assert pipeline.tick()["held_back_rate"] == 1  # same window: still held
    pipeline.clock.advance(35)  # 12:01:05, the next window
    pipeline.tick()
    (run,) = pipeline.runs_of(jobs[2])
    assert (run.deferred, run.deferred_reason) == (1, DeferReason.TENANT_RATE)
    assert len(set(sent_run_ids(pipeline))) == 3  # (the first two were re-sent: nobody received them here)


def test_resends_are_recovery_and_not_held_back_by_a_spent_quota(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=1)
    (job,) = flood(pipeline, "metered", 1, at=START + timedelta(seconds=5))
    pipeline.sqs.purge_queue(QueueUrl=pipeline.resources.queue_urls["normal"])  # its message is lost
    pipeline.clock.advance(40)  # the re-send time (REDISPATCH_AFTER_SECONDS=30) has passed; window spent
    assert pipeline.tick()["redispatched"] == 1
    assert len(pipeline.runs_of(job)) == 1


def test_what_the_feature_costs_per_tick(pipeline: Pipeline) -> None:
    flood(pipeline, "free", 10)
    set_tenant(pipeline, "metered", max_runs_per_minute=100)
    flood(pipeline, "metered", 10)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.calls.clear()

    pipeline.tick()
    # One BatchGetItem for both tenants' settings; one UpdateItem on the metered tenant's window; no per-run
    # request for either, and nothing at all on the free tenant's behalf.
    assert pipeline.calls.count("BatchGetItem") == 1
    window_updates = [p for p in pipeline.calls.params("UpdateItem") if p["Key"]["pk"]["S"].startswith("TENANT#")]
    assert [p["Key"]["pk"]["S"] for p in window_updates] == ["TENANT#metered"]
    assert pipeline.calls.count("SendMessageBatch") == 2  # 20 runs, 10 a batch: no extra request per run

    (later,) = flood(pipeline, "free", 1, at=pipeline.clock.now() + timedelta(seconds=125))  # past the horizon
    pipeline.clock.advance(10)
    pipeline.calls.clear()
    pipeline.tick()  # within the directory's 30 s: the settings are cached
    assert claimed(pipeline, [later]) == 1
    assert pipeline.calls.count("BatchGetItem") == 0


def test_every_run_message_names_its_tenant_as_its_group(pipeline: Pipeline) -> None:
    jobs = flood(pipeline, "acme", 2, at=START + timedelta(seconds=5)) + flood(
        pipeline, "beta", 1, at=START + timedelta(seconds=5)
    )
    entries = [e for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]
    assert sorted(e["MessageGroupId"] for e in entries) == ["acme", "acme", "beta"]
    # As SQS hands them over (sent again to start now: moto's delays run on the wall clock).
    pipeline.services.dispatcher.send_runs(r for j in jobs for r in pipeline.runs_of(j))
    received = [
        (json.loads(m["Body"])["tenant"], m["Attributes"]["MessageGroupId"]) for m in pipeline.receive(Band.NORMAL)
    ]
    assert sorted(received) == [("acme", "acme"), ("acme", "acme"), ("beta", "beta")]


def test_racing_reservations_never_pass_the_limit_and_the_loser_takes_what_is_left(pipeline: Pipeline) -> None:
    rates = TenantRates(pipeline.services.store.shared_table)
    now = pipeline.clock.now()
    assert rates.reserve("metered", want=8, limit=10, now=now) == 8
    pipeline.calls.clear()
    assert rates.reserve("metered", want=5, limit=10, now=now) == 2  # 8 + 5 > 10: re-read, take the 2 left
    assert pipeline.calls.count("UpdateItem") == 2  # the failed condition returned the count: no extra read
    assert rates.reserve("metered", want=1, limit=10, now=now) == 0
    assert rates.used("metered", now) == 10
    pipeline.clock.advance(60)
    assert rates.reserve("metered", want=50, limit=10, now=pipeline.clock.now()) == 10  # a new window


def test_a_failed_reservation_holds_only_that_tenant_back(pipeline: Pipeline, monkeypatch: Any) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=10)
    metered, free = flood(pipeline, "metered", 3), flood(pipeline, "free", 3)
    pipeline.clock.advance(FAR.total_seconds())

    def refused(*_: Any, **__: Any) -> int:
        raise RuntimeError("ProvisionedThroughputExceededException")

    monkeypatch.setattr(pipeline.services.tenant_rates, "reserve", refused)
    report = pipeline.services.dispatcher.claim_due_runs()
    assert (claimed(pipeline, metered), claimed(pipeline, free)) == (0, 3)
    assert report.held_back_rate == 3
    monkeypatch.undo()
    pipeline.clock.advance(60)
    pipeline.tick()
    assert claimed(pipeline, metered) == 3


def test_an_unreadable_job_of_a_rate_limited_tenant_does_not_stop_the_tick(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=10)
    (good,) = flood(pipeline, "metered", 1)
    pipeline.clock.advance(FAR.total_seconds())
    db = pipeline.services.clients.client("dynamodb")
    broken = {"pk": "JOB#broken", "sk": "JOB", "kind": "JOB", "job_id": "broken", "tenant": "metered"}
    item = {k: {"S": v} for k, v in broken.items()}
    item |= {"due_shard": {"S": "0"}, "due_at": {"N": str(int(pipeline.clock.now().timestamp() * 1000))}}
    db.put_item(TableName=pipeline.services.settings.table_name, Item=item)

    report = pipeline.services.dispatcher.claim_due_runs()
    assert claimed(pipeline, [good]) == 1
    assert report.candidates == 2


def test_a_quota_held_back_job_is_not_caught_up_and_one_late_for_an_outage_is(pipeline: Pipeline) -> None:
    """Two jobs of catch-up NONE, one per tenant, both 3 minutes late: the quota of one tenant was spent in each
    of those windows (its flood held the job back), the other's quota held nothing (no tick ran). Only the
    held-back job's missed occurrences all run; the other's are missed."""
    set_tenant(pipeline, "metered", max_runs_per_minute=1000)
    set_tenant(pipeline, "idle", max_runs_per_minute=1000)
    held = pipeline.create_job("metered", schedule={"cron": "* * * * *"}, catchup="NONE")
    late = pipeline.create_job("idle", schedule={"cron": "* * * * *"}, catchup="NONE")  # 12:01, 12:02 claimed
    rates = TenantRates(pipeline.services.store.shared_table)
    for minute in (3, 4, 5):  # the metered tenant's windows 12:03 .. 12:05 were spent by others
        assert rates.reserve("metered", want=1000, limit=1000, now=START + timedelta(minutes=minute)) == 1000
    pipeline.clock.set(START + timedelta(minutes=6))
    pipeline.tick()

    def queued_minutes(job_id: str) -> list[int]:
        runs = pipeline.runs_of(job_id)
        return [int((r.scheduled_for - START).total_seconds() // 60) for r in runs if r.status is RunStatus.QUEUED]

    assert queued_minutes(held.id) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert {(r.deferred_reason) for r in pipeline.runs_of(held.id)[2:5]} == {DeferReason.TENANT_RATE}
    assert queued_minutes(late.id) == [1, 2, 5, 6, 7, 8]  # 12:03 and 12:04 missed; 12:05 within the tolerance
    assert {r.deferred_reason for r in pipeline.runs_of(late.id)} == {None}


def test_an_unread_quota_history_counts_as_held_back_so_nothing_is_skipped(
    pipeline: Pipeline, monkeypatch: Any
) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=1000)
    job = pipeline.create_job("metered", schedule={"cron": "* * * * *"}, catchup="NONE")
    pipeline.clock.set(START + timedelta(minutes=6))

    def refused(*_: Any, **__: Any) -> set[int]:
        raise RuntimeError("ProvisionedThroughputExceededException")

    monkeypatch.setattr(pipeline.services.tenant_rates, "spent_windows", refused)
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    assert [r.status for r in runs] == [RunStatus.QUEUED] * 8  # 12:01 .. 12:08: none skipped as missed
    assert {r.deferred_reason for r in runs[2:5]} == {DeferReason.TENANT_RATE}


def test_a_quota_tenant_with_nothing_late_pays_no_read_of_its_quota_history(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=1000)
    pipeline.create_job("metered", schedule={"cron": "* * * * *"})
    pipeline.clock.advance(60)
    pipeline.calls.clear()
    pipeline.tick()
    # The due index's shards, the freezes' one partition (tickwork.tick.blockers), the audit records waiting for
    # their archive (tickwork.tick.audit_archive) and the redrives' audit records left pending
    # (tickwork.tick.redrive_intents), the job's runs ended since its last claim (its forecast's fold,
    # docs/forecasts.md): no read of the quota history.
    assert pipeline.calls.count("Query") == pipeline.services.store.shards + 4


def test_a_manual_trigger_is_neither_held_back_by_the_quota_nor_counted_in_it(pipeline: Pipeline) -> None:
    set_tenant(pipeline, "metered", max_runs_per_minute=1)
    (job,) = flood(pipeline, "metered", 1)
    rates = TenantRates(pipeline.services.store.shared_table)
    assert rates.reserve("metered", want=1, limit=1, now=START) == 1  # the window is spent
    run = pipeline.services.jobs.trigger("metered", job)
    assert run.id in sent_run_ids(pipeline)  # sent at once
    assert rates.used("metered", START) == 1
