"""Calendars and the blocking decision (pure; no AWS): which occurrences a calendar blocks, until when, across
DST, and what the claim plan does with them (SKIP records naming the calendar; DEFER collapsed by catch-up)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from tickwork.model.blocking import OnBlocked, block_at, first_allowed
from tickwork.model.calendars import Calendar, CalendarMode
from tickwork.model.claim_plan import plan_claim
from tickwork.model.errors import InvalidInput
from tickwork.model.freezes import EVERY_TENANT, Freeze, FreezeSpec
from tickwork.model.ids import ItemKind
from tickwork.model.policies import CatchupPolicy
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.model.schedule import Schedule
from tickwork.model.states import SkipReason

from tests.unit.test_claim_plan import NOW, job


def calendar(
    windows: list[dict[str, Any]], *, mode: str = "exclude", timezone: str = "UTC", cid: str = "cal1"
) -> Calendar:
    return Calendar.model_validate(
        {
            "id": cid,
            "tenant": "t",
            "name": cid,
            "timezone": timezone,
            "mode": mode,
            "windows": windows,
            "created_at": NOW,
            "updated_at": NOW,
        }
    )


# ---------------------------------------------------------------- windows


def test_a_date_window_blocks_the_whole_local_day() -> None:
    christmas = calendar([{"dates": ["2026-12-25"]}], timezone="America/New_York")
    assert christmas.blocks(datetime(2026, 12, 25, 5, 0, tzinfo=UTC))  # 00:00 in New York
    assert not christmas.blocks(datetime(2026, 12, 25, 4, 59, tzinfo=UTC))  # 23:59 on the 24th
    assert christmas.allowed_from(datetime(2026, 12, 25, 12, 0, tzinfo=UTC)) == datetime(2026, 12, 26, 5, 0, tzinfo=UTC)


def test_a_cron_window_across_spring_forward_lasts_its_real_minutes() -> None:
    # Europe/Paris springs forward at 02:00 on 2026-03-29: a 22:00 window of 480 minutes ends at 07:00 wall time
    # (8 real hours), not 06:00.
    nightly = calendar([{"cron": "0 22 * * *", "duration_minutes": 480}], timezone="Europe/Paris")
    opened = datetime(2026, 3, 28, 21, 0, tzinfo=UTC)  # 22:00 CET
    assert nightly.span_holding(opened + timedelta(hours=3)) == (opened, opened + timedelta(hours=8))
    assert nightly.blocks(datetime(2026, 3, 29, 4, 59, tzinfo=UTC))  # 06:59 CEST: still inside
    assert not nightly.blocks(datetime(2026, 3, 29, 5, 0, tzinfo=UTC))  # 07:00 CEST: out
    assert nightly.allowed_from(opened) == datetime(2026, 3, 29, 5, 0, tzinfo=UTC)


def test_a_cron_window_across_fall_back_lasts_its_real_minutes() -> None:
    nightly = calendar([{"cron": "0 22 * * *", "duration_minutes": 480}], timezone="Europe/Paris")
    opened = datetime(2026, 10, 24, 20, 0, tzinfo=UTC)  # 22:00 CEST; falls back at 03:00 CEST
    assert nightly.allowed_from(opened + timedelta(hours=1)) == opened + timedelta(hours=8)  # 05:00 CET


def test_a_range_window_is_half_open() -> None:
    frozen = calendar([{"from": "2026-11-27T00:00:00Z", "to": "2026-11-30T00:00:00Z"}])
    assert frozen.blocks(datetime(2026, 11, 27, tzinfo=UTC))
    assert not frozen.blocks(datetime(2026, 11, 30, tzinfo=UTC))


def test_an_include_calendar_blocks_outside_its_windows_until_the_next_opens() -> None:
    maintenance = calendar([{"cron": "0 2 * * *", "duration_minutes": 60}], mode="include")
    assert maintenance.mode is CalendarMode.INCLUDE
    assert not maintenance.blocks(datetime(2026, 6, 1, 2, 30, tzinfo=UTC))
    assert maintenance.allowed_from(NOW) == datetime(2026, 6, 2, 2, 0, tzinfo=UTC)


def test_the_first_allowed_instant_hops_over_every_blocker() -> None:
    first = calendar([{"from": "2026-06-01T12:00:00Z", "to": "2026-06-01T13:00:00Z"}], cid="a")
    second = calendar([{"from": "2026-06-01T12:30:00Z", "to": "2026-06-01T14:00:00Z"}], cid="b")
    assert first_allowed(NOW, (first, second)) == datetime(2026, 6, 1, 14, tzinfo=UTC)
    block = block_at(NOW, (first, second))
    assert block is not None
    assert block.by == "a"
    assert block.reason is SkipReason.CALENDAR
    assert block_at(NOW - timedelta(minutes=1), (first, second)) is None


@pytest.mark.parametrize(
    ("window", "field"),
    [
        ({"from": "2026-11-27T00:00:00Z"}, "windows.0.range.to"),
        ({"cron": "0 22 * * *"}, "windows.0.cron.duration_minutes"),
        ({"cron": "0 22 * * *", "duration_minutes": 7 * 24 * 60 + 1}, "windows.0.cron.duration_minutes"),
        ({"from": "2026-11-28T00:00:00Z", "to": "2026-11-27T00:00:00Z"}, "windows.0.range"),
    ],
)
def test_a_window_with_no_end_or_too_long_is_refused_by_name(window: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        calendar([window])
    assert ".".join(str(p) for p in refused.value.errors()[0]["loc"]) == field


def test_an_unknown_zone_is_refused() -> None:
    with pytest.raises(ValidationError) as refused:
        calendar([{"dates": ["2026-12-25"]}], timezone="Mars/Olympus")
    assert refused.value.errors()[0]["loc"] == ("timezone",)


# ---------------------------------------------------------------- the claim plan


BLACKOUT = calendar([{"from": "2026-06-01T12:00:30Z", "to": "2026-06-01T12:01:30Z"}])


def test_skip_records_a_blocked_occurrence_skipped_calendar_naming_it() -> None:
    every_30s = job(Schedule(rate="30 seconds"), NOW, blockers=(BLACKOUT,), created_at=NOW - timedelta(minutes=1))
    plan = plan_claim(every_30s, now=NOW, horizon_end=NOW + timedelta(seconds=120))
    blocked = [NOW + timedelta(seconds=s) for s in (30, 60)]
    assert plan.skipped == [(at, SkipReason.CALENDAR) for at in blocked]
    assert plan.queued == [NOW, NOW + timedelta(seconds=90), NOW + timedelta(seconds=120)]
    assert {o.at: o.blocked_by for o in plan.occurrences() if o.skip_reason} == dict.fromkeys(blocked, "cal1")


def test_defer_waits_unwritten_while_the_block_ends_past_the_horizon() -> None:
    long_blackout = calendar([{"from": "2026-06-01T12:00:30Z", "to": "2026-06-01T18:00:00Z"}])
    every_30s = job(
        Schedule(rate="30 seconds"),
        NOW + timedelta(seconds=30),
        blockers=(long_blackout,),
        on_blocked=OnBlocked.DEFER,
        created_at=NOW - timedelta(minutes=1),
    )
    plan = plan_claim(every_30s, now=NOW, horizon_end=NOW + timedelta(seconds=120))
    assert plan.occurrences() == []
    assert plan.next_run_at == NOW + timedelta(seconds=30)
    assert plan.waits_until == datetime(2026, 6, 1, 18, tzinfo=UTC)


@pytest.mark.parametrize(
    ("catchup", "runs"),
    [(CatchupPolicy.LATEST, 1), (CatchupPolicy.NONE, 0), (CatchupPolicy.ALL, 2)],
)
def test_defer_collapses_a_blocked_stretch_by_catch_up(catchup: CatchupPolicy, runs: int) -> None:
    every_30s = job(
        Schedule(rate="30 seconds"),
        NOW + timedelta(seconds=30),
        blockers=(BLACKOUT,),
        on_blocked=OnBlocked.DEFER,
        catchup=catchup,
        created_at=NOW - timedelta(minutes=1),
    )
    plan = plan_claim(every_30s, now=NOW, horizon_end=NOW + timedelta(seconds=120))
    blocked = [NOW + timedelta(seconds=s) for s in (30, 60)]
    kept = blocked[len(blocked) - runs :] if runs else []
    assert [at for at in plan.queued if at < BLACKOUT.windows[0].to] == kept  # type: ignore[union-attr]
    assert plan.skipped == [(at, SkipReason.CALENDAR) for at in blocked if at not in kept]
    deferred = {o.at: o.deferred for o in plan.occurrences() if o.deferred is not None}
    assert {at: (b.until, b.by) for at, b in deferred.items()} == dict.fromkeys(
        kept, (NOW + timedelta(seconds=90), "cal1")
    )
    assert NOW + timedelta(seconds=90) in plan.queued  # the first occurrence past the block runs as ever


# ---------------------------------------------------------------- freezes


def freeze(start: datetime, end: datetime, **kw: Any) -> Freeze:
    fields: dict[str, Any] = {
        "id": "f1",
        "tenant": "t",
        "selector": {"all": True},
        "from": start,
        "until": end,
        "reason": "deploy",
        "created_at": start,
    }
    fields.update(kw)
    return Freeze.model_validate(fields)


def test_a_freeze_selects_by_tags_ids_or_all_and_its_tenant() -> None:
    by_tag = freeze(NOW, NOW + timedelta(hours=1), selector={"tags": {"team": "payments"}})
    assert by_tag.applies_to("t", "j1", {"team": "payments", "x": "y"})
    assert not by_tag.applies_to("t", "j1", {"team": "search"})
    assert not by_tag.applies_to("other", "j1", {"team": "payments"})
    assert freeze(NOW, NOW, tenant=EVERY_TENANT, until=NOW + timedelta(hours=1)).applies_to("other", "j1", {})
    assert freeze(NOW, NOW + timedelta(hours=1), selector={"job_ids": ["j1"]}).applies_to("t", "j1", {})


def test_a_lifted_freeze_ends_at_its_lift() -> None:
    lifted = freeze(NOW, NOW + timedelta(hours=1), lifted_at=NOW + timedelta(minutes=5))
    assert lifted.allowed_from(NOW + timedelta(minutes=1)) == NOW + timedelta(minutes=5)
    assert not lifted.blocks(NOW + timedelta(minutes=5))


def test_a_freeze_ending_before_it_starts_is_refused_naming_until() -> None:
    spec = FreezeSpec.model_validate(
        {"selector": {"all": True}, "from": "2026-06-01T13:00:00Z", "until": "2026-06-01T12:30:00Z", "reason": "r"}
    )
    with pytest.raises(InvalidInput) as refused:
        spec.window(NOW)
    assert [e.field for e in refused.value.errors] == ["until"]


def test_freeze_skips_are_recorded_only_as_their_time_comes() -> None:
    # Lifted early, the occurrences after the lift must still be unclaimed: nothing is recorded ahead.
    frozen = freeze(NOW - timedelta(minutes=1), NOW + timedelta(hours=1))
    every_30s = job(Schedule(rate="30 seconds"), NOW, blockers=(frozen,), created_at=NOW - timedelta(minutes=1))
    plan = plan_claim(every_30s, now=NOW, horizon_end=NOW + timedelta(seconds=120))
    assert plan.skipped == [(NOW, SkipReason.FREEZE)]
    assert plan.queued == []
    assert plan.next_run_at == NOW + timedelta(seconds=30)
    assert plan.waits_until == NOW + timedelta(seconds=30)


def test_a_freeze_ending_within_the_horizon_is_claimed_through_so_the_occurrences_after_it_start_on_time() -> None:
    # Those still to come inside it are claimed marked by it (its executor skips them, or runs them if lifted).
    frozen = freeze(NOW - timedelta(minutes=1), NOW + timedelta(seconds=45))
    every_30s = job(Schedule(rate="30 seconds"), NOW, blockers=(frozen,), created_at=NOW - timedelta(minutes=1))
    plan = plan_claim(every_30s, now=NOW, horizon_end=NOW + timedelta(seconds=120))
    assert plan.skipped == [(NOW, SkipReason.FREEZE)]  # its time has come: recorded
    assert plan.queued == [NOW + timedelta(seconds=s) for s in (30, 60, 90, 120)]
    assert plan.blocked_by == {NOW: frozen.id, NOW + timedelta(seconds=30): frozen.id}
    assert plan.waits_until is None
    workflow = replace(every_30s, kind=ItemKind.WORKFLOW)  # no executor's gate for its runs: it waits
    assert plan_claim(workflow, now=NOW, horizon_end=NOW + timedelta(seconds=120)).queued == []


def test_a_freeze_s_own_defer_applies_whatever_the_job_s_policy() -> None:
    frozen = freeze(NOW - timedelta(minutes=10), NOW + timedelta(seconds=45), on_blocked="DEFER")
    every_minute = job(
        Schedule(rate="1 minute"),
        NOW - timedelta(minutes=9),
        blockers=(frozen,),
        created_at=NOW - timedelta(hours=1),
        catchup=CatchupPolicy.LATEST,
    )  # on_blocked SKIP: the freeze's DEFER wins
    plan = plan_claim(every_minute, now=NOW, horizon_end=NOW + timedelta(seconds=120))
    kept = NOW
    assert [at for at in plan.queued if at <= NOW] == [kept]
    assert plan.deferred[kept].until == NOW + timedelta(seconds=45)
    assert [at for at, _ in plan.skipped] == [NOW - timedelta(minutes=m) for m in range(9, 0, -1)]


def test_a_freeze_s_events_are_due_as_it_starts_and_ends_in_their_order() -> None:
    later = freeze(NOW + timedelta(minutes=5), NOW + timedelta(minutes=10))
    assert later.events_due(NOW, started_recorded=False, ended_recorded=False) == []
    assert later.events_due(NOW + timedelta(minutes=5), started_recorded=False, ended_recorded=False) == [
        RunEventKind.FREEZE_STARTED
    ]
    # A tick that sees it only after its end records both, the start first.
    assert later.events_due(NOW + timedelta(hours=1), started_recorded=False, ended_recorded=False) == [
        RunEventKind.FREEZE_STARTED,
        RunEventKind.FREEZE_ENDED,
    ]
    assert later.events_due(NOW + timedelta(hours=1), started_recorded=True, ended_recorded=True) == []


def test_a_freeze_lifted_before_its_from_never_starts_nor_ends() -> None:
    lifted = freeze(NOW + timedelta(minutes=5), NOW + timedelta(minutes=10), lifted_at=NOW)
    assert lifted.events_due(NOW + timedelta(hours=1), started_recorded=False, ended_recorded=False) == []


def test_a_freeze_s_ended_event_is_at_its_lift_and_names_who_lifted_it() -> None:
    lifted = freeze(NOW, NOW + timedelta(hours=1), lifted_at=NOW + timedelta(minutes=5), lifted_by="acme")
    event = lifted.event(RunEventKind.FREEZE_ENDED)
    assert event.time == NOW + timedelta(minutes=5)
    assert (event.event_id, event.detail["lifted_by"], event.detail["until"]) == (
        f"{lifted.id}#freeze-ended#0",
        "acme",
        "2026-06-01T13:00:00.000Z",
    )
    assert (
        freeze(NOW, NOW, tenant=EVERY_TENANT, until=NOW + timedelta(hours=1))
        .event(RunEventKind.FREEZE_STARTED)
        .detail["tenant"]
        is None
    )
