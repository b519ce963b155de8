"""Every computation on user input is bounded (docs/cron.md, "Bounds"): a calendar window's cron must fire, a
calendar's blackout is crossed in at most CALENDAR_STEP_BUDGET cron steps or the calendar is refused at create,
and what a stored calendar cannot answer within the budget is a recorded skip, never a wait or a stall.

Work is counted in croniter steps (`cron_steps`), never timed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from croniter import croniter
from pydantic import ValidationError
from tickwork.control.backfill import MAX_BACKFILL_DAYS, MAX_BACKFILL_RUNS
from tickwork.model.blocking import OnBlocked, block_at, check_crossable, first_allowed
from tickwork.model.budget import CALENDAR_STEP_BUDGET, CROSSING_CHECK_STEPS, OCCURRENCES_STEP_BUDGET
from tickwork.model.calendars import Calendar, CalendarDefinition
from tickwork.model.claim_plan import plan_claim
from tickwork.model.errors import InvalidInput
from tickwork.model.job import Job
from tickwork.model.preview import MAX_PREVIEW_COUNT, preview, preview_job
from tickwork.model.schedule import Schedule
from tickwork.model.states import SkipReason
from tickwork.model.workflow.definition import WorkflowStep, check_steps
from tickwork.model.workflow.expressions import (
    MAX_EXPRESSION_DEPTH,
    MAX_EXPRESSION_LENGTH,
    MAX_EXPRESSION_VISITS,
    ExpressionFailed,
    compile_expression,
    holds,
)

from tests.unit.test_calendar_blocking import calendar
from tests.unit.test_claim_plan import NOW, job

MONDAY = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)  # 2026-06-01 is a Monday
SATURDAY_AFTER_LAST_WINDOW = datetime(2026, 6, 6, 0, 30, tzinfo=UTC)  # Friday 23:00 + 90 minutes
WEEKDAYS_HOURLY_90 = {"cron": "0 * * * 1-5", "duration_minutes": 90}
WEEK_LONG_PER_SECOND = {"cron": "* * * * * *", "duration_minutes": 7 * 24 * 60}
ALWAYS_BLOCKED = {"cron": "0 * * * *", "duration_minutes": 90}  # every window opens inside the one before


@dataclass
class CronSteps:
    """croniter steps taken (get_next and get_prev, however deep in the code they are taken)."""

    count: int = 0
    ceiling: int = 50 * CALENDAR_STEP_BUDGET  # past it the test fails at once rather than stall (today's code)


@pytest.fixture
def cron_steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[CronSteps]:
    steps = CronSteps()
    for name in ("get_next", "get_prev"):
        original = getattr(croniter, name)

        def counted(self: croniter, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            steps.count += 1
            if steps.count > steps.ceiling:
                raise AssertionError(f"more than {steps.ceiling} cron steps")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(croniter, name, counted)
    return steps


def stored(window: dict[str, Any], *, mode: str = "exclude", timezone: str = "UTC", cid: str = "cal1") -> Calendar:
    """A calendar as stored before its create checked how long its blackouts are: read back, never refused."""
    return calendar([window], mode=mode, timezone=timezone, cid=cid)


def _field(refused: ValidationError) -> str:
    return ".".join(str(p) for p in refused.errors()[0]["loc"])


# ---------------------------------------------------------------- defect 4: a window's cron must fire


@pytest.mark.parametrize("cron", ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 *"])
def test_calendar_window_whose_cron_never_fires_is_refused(cron: str) -> None:
    with pytest.raises(ValidationError) as refused:
        CalendarDefinition.model_validate({"name": "n", "windows": [{"cron": cron, "duration_minutes": 60}]})
    assert _field(refused.value) == "windows.0.cron.cron"
    assert "never fires" in refused.value.errors()[0]["msg"]
    # The same rule as a job's schedule: one validator.
    with pytest.raises(ValidationError) as as_schedule:
        Schedule(cron=cron)
    assert refused.value.errors()[0]["msg"] == as_schedule.value.errors()[0]["msg"]


def test_a_calendar_window_whose_cron_fires_rarely_is_accepted_and_answers_in_a_few_steps(cron_steps) -> None:
    leap_monday = stored({"cron": "0 0 * 2 1#5", "duration_minutes": 60})  # 29 February on a Monday: 2044
    cron_steps.count = 0
    assert not leap_monday.blocks(NOW)
    assert leap_monday.blocks(datetime(2044, 2, 29, 0, 30, tzinfo=UTC))
    assert leap_monday.allowed_from(datetime(2044, 2, 29, 0, 30, tzinfo=UTC)) == datetime(2044, 2, 29, 1, tzinfo=UTC)
    assert cron_steps.count <= 10


# ---------------------------------------------------------------- defect 5: a week-long per-second window


def test_week_long_per_second_window_is_refused_or_answered_within_budget(cron_steps) -> None:
    spec = CalendarDefinition.model_validate({"name": "n", "windows": [WEEK_LONG_PER_SECOND]})
    with pytest.raises(InvalidInput) as refused:
        check_crossable((spec,), NOW, field="windows")
    assert [e.field for e in refused.value.errors] == ["windows[0].cron"]
    assert cron_steps.count <= 2 * CROSSING_CHECK_STEPS  # the check, then the search for the window to name
    # One stored before the check: every question about it is answered within the budget.
    week = stored(WEEK_LONG_PER_SECOND)
    cron_steps.count = 0
    assert week.blocks(NOW)
    assert cron_steps.count <= 2
    cron_steps.count = 0
    assert first_allowed(NOW, (week,)) is None  # none found within the budget
    assert cron_steps.count <= CALENDAR_STEP_BUDGET + 1


def test_a_job_s_preview_behind_a_week_long_per_second_window_answers_within_budget(cron_steps) -> None:
    week = stored(WEEK_LONG_PER_SECOND)
    every_minute = Schedule(cron="* * * * *")
    the_job = Job.model_validate(
        {
            "id": "j" + "0" * 25,
            "tenant": "t",
            "name": "n",
            "type": "echo",
            "schedule": every_minute,
            "created_at": NOW,
            "updated_at": NOW,
            "on_blocked": "DEFER",
        }
    )
    cron_steps.count = 0
    found = preview_job(the_job, after=NOW, count=5, blockers=(week,))
    # Each occurrence takes a whole evaluation's budget: the preview answers those it marked within its own.
    assert [o.blocked.then if o.blocked else None for o in found] == ["skip"] * (
        OCCURRENCES_STEP_BUDGET // CALENDAR_STEP_BUDGET
    )
    assert cron_steps.count <= OCCURRENCES_STEP_BUDGET + CALENDAR_STEP_BUDGET


# ---------------------------------------------------------------- defect 6: chained windows


def test_defer_behind_chained_windows_runs_after_the_blackout(cron_steps) -> None:
    weekdays = stored(WEEKDAYS_HOURLY_90)
    assert first_allowed(MONDAY, (weekdays,)) == SATURDAY_AFTER_LAST_WINDOW
    assert cron_steps.count <= CALENDAR_STEP_BUDGET
    block = block_at(MONDAY, (weekdays,))
    assert block is not None
    assert block.until == SATURDAY_AFTER_LAST_WINDOW
    hourly = job(
        Schedule(cron="0 10 * * *"),
        MONDAY,
        blockers=(weekdays,),
        on_blocked=OnBlocked.DEFER,
        created_at=MONDAY - timedelta(days=1),
    )
    plan = plan_claim(hourly, now=MONDAY, horizon_end=MONDAY + timedelta(minutes=2))
    assert plan.waits_until == SATURDAY_AFTER_LAST_WINDOW


def test_chained_windows_are_accepted_at_create() -> None:
    spec = CalendarDefinition.model_validate({"name": "n", "windows": [WEEKDAYS_HOURLY_90]})
    check_crossable((spec,), MONDAY, field="windows")


def test_a_calendar_of_many_windows_is_checked_in_a_few_steps_per_window(cron_steps) -> None:
    # Sixty one-minute windows, 03:00 to 03:59, one after another: one blackout of an hour, crossed.
    minutes = [{"cron": f"{m} 3 * * *", "duration_minutes": 1} for m in range(60)]
    spec = CalendarDefinition.model_validate({"name": "n", "windows": minutes})
    check_crossable((spec,), NOW, field="windows")
    assert cron_steps.count <= 12 * len(minutes)  # linear in the windows, a dozen steps each
    assert first_allowed(datetime(2026, 6, 2, 3, 0, 30, tzinfo=UTC), (calendar(minutes),)) == datetime(
        2026, 6, 2, 4, tzinfo=UTC
    )


def test_a_blackout_that_never_ends_is_refused_at_create_naming_the_window() -> None:
    spec = CalendarDefinition.model_validate({"name": "n", "windows": [{"dates": ["2026-12-25"]}, ALWAYS_BLOCKED]})
    with pytest.raises(InvalidInput) as refused:
        check_crossable((spec,), NOW, field="windows")
    assert [e.field for e in refused.value.errors] == ["windows[1].cron"]


def test_calendars_that_only_together_never_end_are_refused_naming_calendars() -> None:
    mornings = calendar([{"cron": "0 0 * * *", "duration_minutes": 13 * 60}], cid="a")
    evenings = calendar([{"cron": "0 12 * * *", "duration_minutes": 13 * 60}], cid="b")
    check_crossable((mornings,), NOW, field="windows")
    check_crossable((evenings,), NOW, field="windows")
    with pytest.raises(InvalidInput) as refused:
        check_crossable((mornings, evenings), NOW, field="calendars")
    assert [e.field for e in refused.value.errors] == ["calendars"]


def test_an_include_calendar_whose_windows_are_over_is_accepted_and_answers_never(cron_steps) -> None:
    spec = CalendarDefinition.model_validate(
        {"name": "n", "mode": "include", "windows": [{"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}]}
    )
    check_crossable((spec,), NOW, field="windows")
    over = stored({"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}, mode="include")
    assert first_allowed(NOW, (over,)) is None
    assert cron_steps.count == 0


def test_a_deferred_occurrence_whose_blackout_cannot_be_crossed_is_recorded_skipped_not_waited_on(
    cron_steps,
) -> None:
    always = stored(ALWAYS_BLOCKED)
    every_minute = job(
        Schedule(cron="* * * * *"),
        NOW,
        blockers=(always,),
        on_blocked=OnBlocked.DEFER,
        created_at=NOW - timedelta(days=1),
    )
    plan = plan_claim(every_minute, now=NOW, horizon_end=NOW + timedelta(minutes=2))
    assert plan.waits_until is None
    assert cron_steps.count <= OCCURRENCES_STEP_BUDGET + CALENDAR_STEP_BUDGET
    # Each occurrence takes a whole evaluation's budget: the claim stops where its own is spent; the next goes on.
    assert plan.skipped == [(NOW + timedelta(minutes=m), SkipReason.CALENDAR) for m in range(2)]
    assert plan.next_run_at == NOW + timedelta(minutes=2)
    rest = plan_claim(
        replace(every_minute, next_run_at=plan.next_run_at), now=NOW, horizon_end=NOW + timedelta(minutes=2)
    )
    assert rest.skipped == [(NOW + timedelta(minutes=2), SkipReason.CALENDAR)]


def test_a_claim_stops_where_its_calendars_spent_its_budget_and_the_next_claim_goes_on(cron_steps) -> None:
    always = stored(ALWAYS_BLOCKED)
    every_second = job(
        Schedule(cron="* * * * * *"),
        NOW - timedelta(minutes=5),
        blockers=(always,),
        on_blocked=OnBlocked.DEFER,
        created_at=NOW - timedelta(days=1),
        misfire_grace=timedelta(hours=1),
    )
    plan = plan_claim(every_second, now=NOW, horizon_end=NOW + timedelta(minutes=2))
    assert cron_steps.count <= OCCURRENCES_STEP_BUDGET + CALENDAR_STEP_BUDGET + 10
    decided = len(plan.skipped) + (plan.capped.count if plan.capped else 0)
    assert 0 < decided < 5 * 60 + 120
    assert plan.next_run_at is not None
    assert plan.next_run_at > every_second.next_run_at
    assert {reason for _, reason in plan.skipped} == {SkipReason.CALENDAR}


# ---------------------------------------------------------------- DST


def test_a_window_whose_opening_falls_in_a_dst_gap_opens_at_the_gap_s_end() -> None:
    # Europe/Paris skips 02:00-03:00 on 2026-03-29: a 02:30 window opens at 03:00 CEST (01:00 UTC) that day.
    night = stored({"cron": "30 2 * * *", "duration_minutes": 60}, timezone="Europe/Paris")
    assert not night.blocks(datetime(2026, 3, 29, 0, 59, tzinfo=UTC))
    assert night.blocks(datetime(2026, 3, 29, 1, 0, tzinfo=UTC))
    assert night.allowed_from(datetime(2026, 3, 29, 1, 30, tzinfo=UTC)) == datetime(2026, 3, 29, 2, 0, tzinfo=UTC)
    check_crossable((night,), datetime(2026, 3, 28, tzinfo=UTC), field="windows")


def test_a_window_in_the_repeated_hour_is_found_from_its_second_pass() -> None:
    # Europe/Paris repeats 02:00-03:00 on 2026-10-25: a 02:45 window of 30 minutes opens at 02:45 CEST (00:45 UTC)
    # only; at 02:10 CET (01:10 UTC, the second pass) it has ended.
    night = stored({"cron": "45 2 * * *", "duration_minutes": 30}, timezone="Europe/Paris")
    assert night.blocks(datetime(2026, 10, 25, 1, 0, tzinfo=UTC))
    assert not night.blocks(datetime(2026, 10, 25, 1, 15, tzinfo=UTC))
    assert night.allowed_from(datetime(2026, 10, 25, 0, 50, tzinfo=UTC)) == datetime(2026, 10, 25, 1, 15, tzinfo=UTC)


# ---------------------------------------------------------------- workflow expressions (JMESPath)

DOUBLING_17 = "[@, @][]" * 17  # 2**17 copies: each `[@, @][]` doubles what it is given


@pytest.mark.parametrize(
    "text",
    [
        "(" * 600 + "steps" + ")" * 600,  # past Python's stack: JMESPath's parser recurses once per level
        "[" * (MAX_EXPRESSION_DEPTH + 1) + "steps" + "]" * (MAX_EXPRESSION_DEPTH + 1),
        "a" * (MAX_EXPRESSION_LENGTH + 1),
    ],
    ids=["past the stack", "nested lists", "too long"],
)
def test_an_expression_too_deep_or_too_long_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ValueError, match=r"nested|long"):
        compile_expression(text)


def test_a_workflow_whose_condition_is_nested_too_deeply_is_refused_naming_the_condition() -> None:
    nested = "(" * 400 + "steps.a.result" + ")" * 400
    steps = [
        WorkflowStep.model_validate({"id": "a", "type": "echo"}),
        WorkflowStep.model_validate({"id": "b", "type": "echo", "depends_on": ["a"], "condition": nested}),
        WorkflowStep.model_validate(
            {
                "id": "c",
                "type": "echo",
                "depends_on": ["a"],
                "payload": {"x": {"$from": "length(" * 60 + "steps.a" + ")" * 60}},
            }
        ),
    ]
    assert [e.field for e in check_steps(steps)] == ["steps[1].condition", "steps[2].payload.x.$from"]


def test_an_expression_that_multiplies_its_input_fails_within_its_budget_of_visits() -> None:
    compile_expression(DOUBLING_17)  # short and shallow: accepted; its work depends on the data
    with pytest.raises(ExpressionFailed, match=f"{MAX_EXPRESSION_VISITS}"):
        holds(DOUBLING_17, {"steps": {}})
    assert holds("[@, @][]", {"steps": {}})  # a little of it is fine


# ---------------------------------------------------------------- schedules, previews and backfills (bounds kept)


def test_a_backfill_of_a_per_second_cron_over_its_widest_range_takes_a_step_per_run(cron_steps) -> None:
    every_second = Schedule(cron="* * * * * *")
    widest = timedelta(days=MAX_BACKFILL_DAYS)
    found = every_second.occurrences(NOW - widest, NOW, anchor=NOW - widest, limit=MAX_BACKFILL_RUNS)
    assert len(found) == MAX_BACKFILL_RUNS
    assert cron_steps.count <= MAX_BACKFILL_RUNS + 1


def test_a_preview_of_the_most_per_second_occurrences_takes_a_step_each(cron_steps) -> None:
    found = preview(Schedule(cron="* * * * * *"), after=NOW, count=MAX_PREVIEW_COUNT, anchor=NOW)
    assert len(found) == MAX_PREVIEW_COUNT
    assert cron_steps.count <= MAX_PREVIEW_COUNT + 1


def test_a_cron_that_fires_rarely_previews_in_a_step_per_occurrence(cron_steps) -> None:
    # 29 February on a Monday: February's fifth Monday (`0 0 29 2 1` is the 29th OR any Monday, Vixie's rule).
    leap_monday = Schedule(cron="0 0 * 2 1#5")
    found = preview(leap_monday, after=NOW, count=3, anchor=NOW)
    assert [o.at.year for o in found] == [2044, 2072, 2112]
    assert cron_steps.count <= 3


@pytest.mark.parametrize(
    ("zone", "cron", "after", "gap_end"),
    [
        ("Europe/Paris", "30 2 * * *", datetime(2026, 3, 28, 12, tzinfo=UTC), "2026-03-29T03:00:00.000+02:00"),
        ("America/New_York", "*/10 2 * * *", datetime(2026, 3, 7, 12, tzinfo=UTC), "2026-03-08T03:00:00.000-04:00"),
        ("Australia/Lord_Howe", "15 2 * * *", datetime(2026, 10, 3, 0, tzinfo=UTC), "2026-10-04T02:30:00.000+11:00"),
    ],
)
def test_a_cron_in_a_dst_gap_previews_in_a_step_per_occurrence(
    cron_steps, zone: str, cron: str, after: datetime, gap_end: str
) -> None:
    found = preview(Schedule(cron=cron, timezone=zone), after=after, count=3, anchor=after)
    gap = [o for o in found if o.dst == "gap"]
    assert [o.local for o in gap] == [gap_end]
    assert cron_steps.count <= 3 + len(gap)


def test_a_jitter_check_of_a_cron_firing_often_far_from_its_zone_s_offset_changes_takes_a_few_hundred_steps(
    cron_steps,
) -> None:
    """Found over HTTP by the fuzz's 2 s bound: a job with cron `0-30 * 1 1 1-5` in Australia/Lord_Howe and a jitter
    took 16 s to refuse. The jitter's check (the schedule's shortest period) walked, across each of the zone's offset
    changes (April, October), every January occurrence from the last before it, thousands, and counted them again
    at each. The last occurrence before a change is one step back now."""
    from tickwork.model.schedule import PERIOD_SAMPLE, _shortest_period

    _shortest_period.cache_clear()
    schedule = Schedule.model_validate({"cron": "0-30 * 1 1 1-5", "timezone": "Australia/Lord_Howe"})
    cron_steps.count = 0
    assert schedule.shortest_period() == timedelta(minutes=1)
    assert cron_steps.count <= PERIOD_SAMPLE + 50
