"""The claim plan under each catch-up policy and with an open circuit breaker (pure; no AWS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.model.claim_plan import CATCHUP_ALL_CAP, ClaimableJob, plan_claim
from tickwork.model.policies import BreakerState, CatchupPolicy
from tickwork.model.schedule import Schedule
from tickwork.model.states import JobState, SkipReason
from tickwork.model.tenant_settings import rate_window
from tickwork.tick.fairness import held_by_quota

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HORIZON = NOW + timedelta(seconds=120)
MINUTE = timedelta(minutes=1)
EVERY_MINUTE = Schedule(cron="* * * * *")


def claimable(catchup: CatchupPolicy, next_run_at: datetime, **kw: object) -> ClaimableJob:
    return ClaimableJob(
        job_id="j" + "0" * 25,
        tenant="t",
        priority=5,
        schedule=kw.pop("schedule", EVERY_MINUTE),  # type: ignore[arg-type]
        version=1,
        next_run_at=next_run_at,
        created_at=NOW - timedelta(days=1),
        misfire_grace=timedelta(minutes=15),
        catchup=catchup,
        **kw,  # type: ignore[arg-type]
    )


def minutes(*offsets: int) -> list[datetime]:
    return [NOW + m * MINUTE for m in offsets]


def test_catchup_each_policy_after_ten_missed_minutes() -> None:
    start = NOW - 10 * MINUTE
    for policy, queued, skipped in [
        (CatchupPolicy.NONE, minutes(-1, 0, 1, 2), minutes(*range(-10, -1))),
        (CatchupPolicy.LATEST, minutes(-2, -1, 0, 1, 2), minutes(*range(-10, -2))),
        (CatchupPolicy.ALL, minutes(*range(-10, 3)), []),
    ]:
        plan = plan_claim(claimable(policy, start), now=NOW, horizon_end=HORIZON)
        assert plan.queued == queued, policy
        assert plan.skipped == [(at, SkipReason.MISFIRED) for at in skipped], policy


def test_catchup_on_time_claims_are_untouched_by_none() -> None:
    plan = plan_claim(claimable(CatchupPolicy.NONE, NOW + MINUTE), now=NOW, horizon_end=HORIZON)
    assert plan.queued == minutes(1, 2)
    assert plan.skipped == []


def test_catchup_does_not_apply_to_runs_a_rate_quota_held_back() -> None:
    plan = plan_claim(claimable(CatchupPolicy.NONE, NOW - 5 * MINUTE, held_by_quota=True), now=NOW, horizon_end=HORIZON)
    assert plan.queued == minutes(-5, -4, -3, -2, -1, 0, 1, 2)


def test_catchup_all_runs_only_its_cap_of_the_most_recent() -> None:
    per_second = Schedule(rate="1 second")
    start = NOW - timedelta(seconds=600)
    plan = plan_claim(claimable(CatchupPolicy.ALL, start, schedule=per_second), now=NOW, horizon_end=HORIZON)
    first_run = NOW - timedelta(seconds=60) - timedelta(seconds=CATCHUP_ALL_CAP)
    # The older ones are one stretch of misfired records (10 one by one, then one capped record to the cap).
    assert [reason for _, reason in plan.skipped] == [SkipReason.MISFIRED] * 10
    assert plan.capped is not None
    assert plan.capped.last == first_run - timedelta(seconds=1)
    assert plan.queued == []
    assert plan.next_run_at == first_run


def test_breaker_open_skips_until_the_probe() -> None:
    breaker = BreakerState(opens_until=NOW + 90 * timedelta(seconds=1), cooldown_seconds=120, consecutive_failures=3)
    job = claimable(CatchupPolicy.LATEST, NOW + MINUTE, state=JobState.SUSPENDED, breaker=breaker)
    # Open: an occurrence still to come gets no record yet (a resume before it must find it unclaimed).
    early = plan_claim(job, now=NOW, horizon_end=NOW + 4 * MINUTE)
    assert (early.skipped, early.queued, early.next_run_at) == ([], [], NOW + MINUTE)
    # Its time come, it is recorded; the probe (the first occurrence from the cooldown's end) is queued ahead;
    # the plan stops before the next occurrence still to come.
    plan = plan_claim(job, now=NOW + MINUTE, horizon_end=NOW + 5 * MINUTE)
    assert plan.skipped == [(at, SkipReason.CIRCUIT_OPEN) for at in minutes(1)]
    assert plan.queued == minutes(2)
    assert plan.probe_at == NOW + 2 * MINUTE
    assert plan.next_run_at == NOW + 3 * MINUTE
    # Once the probe is out, nothing more runs while it is open.
    probing = claimable(
        CatchupPolicy.LATEST,
        NOW + 5 * MINUTE,
        state=JobState.SUSPENDED,
        breaker=breaker.model_copy(update={"probe_at": NOW + 2 * MINUTE}),
    )
    later = plan_claim(probing, now=NOW + 7 * MINUTE, horizon_end=NOW + 9 * MINUTE)
    assert later.queued == []
    assert later.probe_at is None
    assert later.skipped == [(at, SkipReason.CIRCUIT_OPEN) for at in minutes(5, 6, 7)]
    assert later.next_run_at == NOW + 8 * MINUTE


def test_breaker_open_bounds_the_records_of_a_per_second_job() -> None:
    breaker = BreakerState(opens_until=NOW + timedelta(hours=1), cooldown_seconds=3600, consecutive_failures=1)
    job = claimable(
        CatchupPolicy.LATEST,
        NOW,
        schedule=Schedule(rate="1 second"),
        state=JobState.SUSPENDED,
        breaker=breaker,
    )
    now = NOW + MINUTE
    plan = plan_claim(job, now=now, horizon_end=HORIZON)
    assert len(plan.skipped) == 10
    assert plan.capped is not None
    assert plan.capped.reason is SkipReason.CIRCUIT_OPEN
    # The capped record reaches now, no further (what is still to come is recorded when its time comes); the
    # next claim goes on from there.
    assert plan.capped.last == now
    assert plan.next_run_at == now + timedelta(seconds=1)
    assert plan.queued == []


def test_catchup_none_holds_for_a_quota_tenant_whose_quota_held_nothing_back() -> None:
    """A tenant with a quota, after an outage: no window of its quota was spent, so its job is late for the
    outage, not for the quota, and catch-up NONE runs none of the missed occurrences."""
    start = NOW - 10 * MINUTE
    job = claimable(CatchupPolicy.NONE, start, held_by_quota=held_by_quota(start, NOW, spent_windows=set()))
    plan = plan_claim(job, now=NOW, horizon_end=HORIZON, max_queued=1000)
    assert plan.queued == minutes(-1, 0, 1, 2)
    assert plan.skipped == [(at, SkipReason.MISFIRED) for at in minutes(*range(-10, -1))]


def test_catchup_does_not_apply_when_a_window_of_the_quota_was_spent_since_the_job_was_due() -> None:
    start = NOW - 5 * MINUTE
    spent = {rate_window(NOW - 2 * MINUTE)}
    job = claimable(CatchupPolicy.NONE, start, held_by_quota=held_by_quota(start, NOW, spent_windows=spent))
    plan = plan_claim(job, now=NOW, horizon_end=HORIZON, max_queued=1000)
    assert plan.queued == minutes(-5, -4, -3, -2, -1, 0, 1, 2)
