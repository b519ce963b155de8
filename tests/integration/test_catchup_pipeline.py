"""Catch-up after an outage (docs/policies.md, "Catch-up"): a cron every minute, no tick for 10 minutes, then
ticks again, under each policy. Every occurrence gets exactly one record; the policy decides which run."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus, SkipReason

from tests.harness import START

MINUTE = timedelta(minutes=1)


def _at(minute: int):
    return START + minute * MINUTE


def _outage_then_ticks(pipeline, **spec):
    """Created at 12:00 (12:01 and 12:02 claimed then), no tick until 12:10, then two ticks a minute apart."""
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, **spec)
    pipeline.clock.advance(600)
    first = pipeline.tick()
    pipeline.clock.advance(60)
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    # Exactly one record per occurrence, 12:01 .. 12:13 (the second tick's horizon), none missing.
    assert Counter(r.scheduled_for for r in runs) == Counter(_at(m) for m in range(1, 14))
    return job, first, runs


def _queued(runs):
    return [r.scheduled_for for r in runs if r.status is RunStatus.QUEUED]


def _skipped(runs):
    return [(r.scheduled_for, r.skip_reason) for r in runs if r.status is RunStatus.SKIPPED]


# At 12:10, 12:03 .. 12:08 are missed (more than the 60 s tolerance late); 12:09 is late by the tolerance only
# and runs as on time, as do 12:10 and what the horizon reaches.
ON_TIME = [_at(m) for m in range(9, 14)]


def test_catchup_latest_is_the_default_and_runs_only_the_most_recent_missed(pipeline):
    job, first, runs = _outage_then_ticks(pipeline)
    assert pipeline.services.store.jobs.get_job(job.id).catchup.value == "LATEST"
    assert _queued(runs) == [_at(1), _at(2), _at(8), *ON_TIME]
    assert _skipped(runs) == [(_at(m), SkipReason.MISFIRED) for m in range(3, 8)]
    assert first["skipped"] == 5


def test_catchup_none_runs_nothing_missed(pipeline):
    _, first, runs = _outage_then_ticks(pipeline, catchup="NONE")
    assert _queued(runs) == [_at(1), _at(2), *ON_TIME]
    assert _skipped(runs) == [(_at(m), SkipReason.MISFIRED) for m in range(3, 9)]
    assert first["skipped"] == 6


def test_catchup_all_runs_every_missed_occurrence_in_order(pipeline):
    _, first, runs = _outage_then_ticks(pipeline, catchup="ALL")
    assert _queued(runs) == [_at(m) for m in range(1, 14)]
    assert _skipped(runs) == []
    assert first["skipped"] == 0
    # The missed runs are due now: their messages go without delay, oldest first, and each runs.
    due = [m for band in Band for m in pipeline.receive(band)]
    assert len(due) >= 8
    pipeline.deliver(Band.NORMAL, due)
    assert [r.status for r in pipeline.runs_of(runs[0].job_id)[2:10]] == [RunStatus.SUCCEEDED] * 8


def test_catchup_all_still_skips_what_is_older_than_the_grace(pipeline):
    _, _, runs = _outage_then_ticks(pipeline, catchup="ALL", misfire_grace_seconds=240)
    # At 12:10 the grace reaches back to 12:06: 12:03 .. 12:05 are misfired whatever the policy.
    assert _skipped(runs) == [(_at(m), SkipReason.MISFIRED) for m in range(3, 6)]
    assert _queued(runs) == [_at(1), _at(2), *[_at(m) for m in range(6, 14)]]


def test_catchup_all_runs_at_most_its_cap(pipeline):
    from tickwork.model.claim_plan import CATCHUP_ALL_CAP

    job = pipeline.create_job(schedule={"rate": "1 second"}, catchup="ALL", misfire_grace_seconds=900)
    pipeline.clock.advance(600)
    for _ in range(3):
        pipeline.tick()
    runs = pipeline.runs_of(job.id)
    now = pipeline.clock.now()
    missed_run = [r for r in runs if r.status is RunStatus.QUEUED and r.scheduled_for < now - MINUTE]
    assert 0 < len(missed_run) <= CATCHUP_ALL_CAP + 120  # the cap, plus the seconds as the ticks reached them
    accounted = sum(r.skipped_count or 1 for r in runs if r.status is RunStatus.SKIPPED)
    assert accounted > 0


@pytest.mark.parametrize("policy", ["NONE", "LATEST", "ALL"])
def test_catchup_never_runs_what_fell_while_paused(pipeline, policy):
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, catchup=policy)
    pipeline.services.jobs.pause("default", job.id)
    pipeline.clock.advance(600)
    pipeline.services.jobs.resume("default", job.id)
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    assert Counter(r.scheduled_for for r in runs) == Counter(_at(m) for m in range(1, 13))
    # 12:01 and 12:02 were queued before the pause (the executor skips them as paused); 12:03 .. 12:09 fell
    # during the pause: recorded paused, never run, whatever the policy; 12:10 (the resume's instant) is on time.
    assert _skipped(runs) == [(_at(m), SkipReason.PAUSED) for m in range(3, 10)]
    assert _queued(runs) == [_at(1), _at(2), _at(10), _at(11), _at(12)]


def test_catchup_normal_ticks_are_not_an_outage(pipeline):
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, catchup="NONE")
    for _ in range(10):
        pipeline.clock.advance(60)
        pipeline.tick()
    runs = pipeline.runs_of(job.id)
    assert _skipped(runs) == []
    assert _queued(runs) == [_at(m) for m in range(1, 13)]


@pytest.mark.parametrize(
    ("policy", "missed_run"), [("NONE", []), ("LATEST", [_at(8)]), ("ALL", [_at(m) for m in range(3, 9)])]
)
def test_catchup_holds_for_a_tenant_with_a_rate_quota_nowhere_near_it(pipeline, policy, missed_run):
    """A quota the outage never reached held nothing back: the missed occurrences are missed, the policy
    decides which run, and none is labelled as waiting for the quota."""
    from tickwork.model.tenant_settings import TenantSettings

    settings = TenantSettings(max_runs_per_minute=1000)
    pipeline.services.tenant_records.put_settings("default", settings, pipeline.clock.now())
    _, _, runs = _outage_then_ticks(pipeline, catchup=policy)
    assert _queued(runs) == [_at(1), _at(2), *missed_run, *ON_TIME]
    missed_skipped = sorted({_at(m) for m in range(3, 9)} - set(missed_run))
    assert _skipped(runs) == [(at, SkipReason.MISFIRED) for at in missed_skipped]
    assert {(r.deferred, r.deferred_reason) for r in runs} == {(0, None)}
