"""The claim plan: what one claim decides for each occurrence (pure; no AWS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.model.claim_plan import MAX_RUNS_PER_CLAIM, MISFIRE_RECORD_CAP, ClaimableJob, plan_claim
from tickwork.model.schedule import Schedule
from tickwork.model.states import SkipReason

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HORIZON = NOW + timedelta(seconds=120)


def job(schedule: Schedule, next_run_at: datetime, **kw: object) -> ClaimableJob:
    fields: dict = {
        "job_id": "j" + "0" * 25,
        "tenant": "t",
        "priority": 5,
        "schedule": schedule,
        "version": 1,
        "next_run_at": next_run_at,
        "created_at": NOW - timedelta(days=1),
        "misfire_grace": timedelta(minutes=15),
    }
    fields.update(kw)
    return ClaimableJob(**fields)


def test_one_shot_due_within_horizon_is_queued_and_leaves_the_index() -> None:
    at = NOW + timedelta(seconds=30)
    plan = plan_claim(job(Schedule(at=at), at), now=NOW, horizon_end=HORIZON)
    assert plan.queued == [at]
    assert plan.next_run_at is None
    assert plan.complete is False  # a one-shot completes when its run succeeds


def test_cron_claims_every_occurrence_in_the_horizon_and_advances_past_it() -> None:
    schedule = Schedule(cron="* * * * *")
    plan = plan_claim(job(schedule, NOW), now=NOW, horizon_end=HORIZON)
    assert plan.queued == [NOW, NOW + timedelta(minutes=1), NOW + timedelta(minutes=2)]
    assert plan.next_run_at == NOW + timedelta(minutes=3)


def test_fast_rate_is_claimed_in_bounded_transactions() -> None:
    plan = plan_claim(job(Schedule(rate="1 second"), NOW), now=NOW, horizon_end=HORIZON)
    assert len(plan.queued) == MAX_RUNS_PER_CLAIM
    assert plan.next_run_at == NOW + timedelta(seconds=MAX_RUNS_PER_CLAIM)


def test_late_but_within_grace_still_runs() -> None:
    late = NOW - timedelta(minutes=14)
    plan = plan_claim(job(Schedule(at=late), late), now=NOW, horizon_end=HORIZON)
    assert plan.queued == [late]
    assert plan.skipped == []


def test_beyond_grace_is_skipped_as_misfired() -> None:
    late = NOW - timedelta(minutes=16)
    plan = plan_claim(job(Schedule(at=late), late), now=NOW, horizon_end=HORIZON)
    assert plan.queued == []
    assert plan.skipped == [(late, SkipReason.MISFIRED)]
    assert plan.next_run_at is None


def test_outage_catch_up_is_capped_and_counted_not_a_storm() -> None:
    # A 1-minute cron after a 10-hour outage: 600 missed occurrences, 585 beyond the 15-minute grace.
    schedule = Schedule(cron="* * * * *")
    start = NOW - timedelta(hours=10)
    plan = plan_claim(job(schedule, start), now=NOW, horizon_end=HORIZON)
    assert len(plan.skipped) == MISFIRE_RECORD_CAP
    assert plan.capped is not None
    total_misfired = MISFIRE_RECORD_CAP + plan.capped.count
    assert total_misfired == 600 - 15  # every occurrence older than the grace gets exactly one decision
    assert plan.capped.last == NOW - timedelta(minutes=16)
    # What is still within grace is not decided in this claim; the next round queues it.
    assert plan.next_run_at == NOW - timedelta(minutes=15)
    assert plan.queued == []


def test_occurrences_missed_while_paused_are_skipped_as_paused() -> None:
    schedule = Schedule(cron="*/30 * * * *")
    paused_at = NOW - timedelta(hours=2)
    resumed_at = NOW - timedelta(seconds=5)
    missed = paused_at + timedelta(minutes=30)
    plan = plan_claim(job(schedule, missed, paused_at=paused_at, resumed_at=resumed_at), now=NOW, horizon_end=HORIZON)
    reasons = {reason for _, reason in plan.skipped}
    assert reasons == {SkipReason.PAUSED}
    assert [t for t, _ in plan.skipped] == [missed + timedelta(minutes=30 * k) for k in range(3)]
    assert plan.queued == [NOW]  # 12:00 is within grace: it runs


def test_recurring_whose_last_run_is_queued_is_not_complete_until_it_settles() -> None:
    schedule = Schedule(rate="1 minute", start_at=NOW - timedelta(minutes=1), end_at=NOW + timedelta(seconds=30))
    plan = plan_claim(job(schedule, NOW), now=NOW, horizon_end=HORIZON)
    assert plan.queued == [NOW]
    assert plan.next_run_at is None
    assert plan.complete is False  # the executor completes the job once that last run has settled


def test_recurring_whose_last_occurrence_is_skipped_completes_at_the_claim() -> None:
    schedule = Schedule(rate="1 minute", start_at=NOW - timedelta(hours=1), end_at=NOW - timedelta(minutes=30))
    plan = plan_claim(job(schedule, NOW - timedelta(hours=1)), now=NOW, horizon_end=HORIZON)
    assert plan.queued == []
    assert plan.next_run_at is None
    assert plan.complete is True  # every occurrence is a skip record: settled now
