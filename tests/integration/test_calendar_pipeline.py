"""Calendars through the tick (moto, fake clock): blocked occurrences recorded SKIPPED `calendar` naming the
calendar, or deferred to the window's end and collapsed by catch-up; DST inside a window; an edit changes only
what is not yet claimed; and each calendar read once per tick, not per occurrence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tickwork.model.calendars import Calendar, CalendarDefinition, CalendarMode, CronWindow
from tickwork.model.states import DeferReason, RunStatus, SkipReason

from tests.harness import START, TENANT

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
MINUTE = timedelta(minutes=1)


def _at(minute: int) -> datetime:
    return START + minute * MINUTE


def _calendar(pipeline: Any, windows: list[dict[str, Any]], **fields: Any) -> Calendar:
    spec = CalendarDefinition.model_validate({"name": "blackout", "windows": windows, **fields})
    return pipeline.services.calendars.create(TENANT, spec)


def _range(start: datetime, end: datetime) -> dict[str, str]:
    return {"from": start.isoformat(), "to": end.isoformat()}


def _records(pipeline: Any, job_id: str) -> list[tuple[datetime, RunStatus, Any, Any]]:
    return [(r.occurrence_at, r.status, r.skip_reason, r.blocked_by) for r in pipeline.runs_of(job_id)]


def _calendar_reads(pipeline: Any) -> int:
    return sum(
        1
        for p in pipeline.calls.params("BatchGetItem")
        if any(k["sk"]["S"].startswith("CALENDAR#") for t in p["RequestItems"].values() for k in t["Keys"])
    )


def _tick_through(pipeline: Any, minutes: int) -> None:
    for _ in range(minutes):
        pipeline.clock.advance(60)
        pipeline.tick()


def test_skip_records_blocked_occurrences_skipped_calendar_naming_it(pipeline):
    blackout = _calendar(pipeline, [_range(_at(2), _at(4))])
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, calendars=[blackout.id])
    _tick_through(pipeline, 4)
    records = _records(pipeline, job.id)[:5]
    assert records == [
        (_at(1), RunStatus.QUEUED, None, None),
        (_at(2), RunStatus.SKIPPED, SkipReason.CALENDAR, blackout.id),
        (_at(3), RunStatus.SKIPPED, SkipReason.CALENDAR, blackout.id),
        (_at(4), RunStatus.QUEUED, None, None),
        (_at(5), RunStatus.QUEUED, None, None),
    ]


def test_a_calendar_is_read_once_per_tick_however_many_jobs_and_occurrences(pipeline):
    blackout = _calendar(pipeline, [_range(_at(2), _at(60))])
    for _ in range(3):
        pipeline.create_job(schedule={"rate": "10 seconds"}, calendars=[blackout.id])
    pipeline.clock.advance(60)
    pipeline.calls.clear()
    pipeline.tick()
    assert _calendar_reads(pipeline) == 1


def test_defer_runs_the_latest_blocked_occurrence_at_the_window_s_end(timed_pipeline):
    pipeline = timed_pipeline
    blackout = _calendar(pipeline, [_range(_at(2), _at(4) + timedelta(seconds=30))])
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, calendars=[blackout.id], on_blocked="DEFER")
    _tick_through(pipeline, 4)
    runs = {r.occurrence_at: r for r in pipeline.runs_of(job.id)}
    # 12:02 .. 12:04 are blocked until 12:04:30: catch-up LATEST runs the latest of them then, the rest skipped.
    assert [(runs[_at(m)].status, runs[_at(m)].skip_reason) for m in (2, 3)] == [
        (RunStatus.SKIPPED, SkipReason.CALENDAR)
    ] * 2
    deferred = runs[_at(4)]
    assert (deferred.status, deferred.scheduled_for, deferred.nominal_at) == (
        RunStatus.QUEUED,
        _at(4) + timedelta(seconds=30),
        _at(4),
    )
    assert (deferred.deferred_reason, deferred.blocked_by) == (DeferReason.CALENDAR, blackout.id)
    assert runs[_at(5)].status is RunStatus.QUEUED
    assert runs[_at(5)].nominal_at is None
    pipeline.clock.advance(60)
    pipeline.drain()
    # Its lateness counts from its own occurrence, 12:04, not from the window's end.
    assert pipeline.run(deferred.id).status is RunStatus.SUCCEEDED
    assert pipeline.run(deferred.id).lateness_ms >= 30_000


def test_dst_inside_a_window_the_window_lasts_its_real_minutes(pipeline):
    # Europe/Paris springs forward on 2027-03-28 at 02:00 CET (01:00 UTC). A window opening at 00:00 for 180
    # minutes ends at 02:00 UTC (04:00 CEST), not at 03:00 wall time (01:00 UTC).
    pipeline.clock.advance((datetime(2027, 3, 28, 0, 0, tzinfo=UTC) - START).total_seconds())
    nightly = _calendar(pipeline, [{"cron": "0 0 * * *", "duration_minutes": 180}], timezone="Europe/Paris")
    job = pipeline.create_job(schedule={"rate": "30 minutes"}, calendars=[nightly.id])
    for _ in range(5):
        pipeline.clock.advance(29 * 60)
        pipeline.tick()
        pipeline.clock.advance(60)
    half_hours = [datetime(2027, 3, 28, 0, 30, tzinfo=UTC) + k * timedelta(minutes=30) for k in range(5)]
    statuses = {r.occurrence_at: (r.status, r.skip_reason) for r in pipeline.runs_of(job.id)}
    assert [statuses[at] for at in half_hours] == [
        (RunStatus.SKIPPED, SkipReason.CALENDAR),  # 00:30 UTC, 01:30 CET
        (RunStatus.SKIPPED, SkipReason.CALENDAR),  # 01:00 UTC, 03:00 CEST: the wall clock jumped
        (RunStatus.SKIPPED, SkipReason.CALENDAR),  # 01:30 UTC, 03:30 CEST
        (RunStatus.QUEUED, None),  # 02:00 UTC, 04:00 CEST: 180 real minutes after it opened
        (RunStatus.QUEUED, None),
    ]


def test_editing_a_calendar_changes_only_the_occurrences_not_yet_claimed(pipeline):
    calendar = _calendar(pipeline, [_range(_at(60), _at(61))])
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, calendars=[calendar.id])  # claims 12:01, 12:02
    spec = CalendarDefinition.model_validate({"name": "blackout", "windows": [_range(_at(2), _at(4))]})
    pipeline.services.calendars.replace(TENANT, calendar.id, spec)
    _tick_through(pipeline, 3)
    statuses = {r.occurrence_at: (r.status, r.skip_reason) for r in pipeline.runs_of(job.id)}
    assert statuses[_at(2)] == (RunStatus.QUEUED, None)  # claimed before the edit: it runs as claimed
    assert statuses[_at(3)] == (RunStatus.SKIPPED, SkipReason.CALENDAR)
    assert statuses[_at(4)] == (RunStatus.QUEUED, None)


def test_a_deleted_calendar_blocks_nothing(pipeline):
    calendar = _calendar(pipeline, [_range(_at(0), _at(60))])
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, calendars=[calendar.id])
    pipeline.services.calendars.delete(TENANT, calendar.id)
    _tick_through(pipeline, 2)
    statuses = {r.occurrence_at: r.status for r in pipeline.runs_of(job.id)}
    assert statuses[_at(1)] is RunStatus.SKIPPED  # claimed at create, while it existed
    assert statuses[_at(3)] is RunStatus.QUEUED


def _stored_unchecked(pipeline: Any, windows: list[dict[str, Any]]) -> Calendar:
    """A calendar stored as one created before its create checked how long its blackouts are."""
    calendar = Calendar.model_validate(
        {"id": "c" + "1" * 25, "tenant": TENANT, "name": "old", "windows": windows, "created_at": START}
        | {"updated_at": START}
    )
    assert pipeline.services.calendars.records.put_new(calendar)
    return calendar


def test_a_defer_job_behind_a_blackout_with_no_end_found_is_recorded_skipped_every_tick_not_left_waiting(pipeline):
    # Every window opens inside the one before: the blackout never ends, and its end is never found.
    endless = _stored_unchecked(pipeline, [{"cron": "0 * * * *", "duration_minutes": 90}])
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, calendars=[endless.id], on_blocked="DEFER")
    _tick_through(pipeline, 3)
    records = _records(pipeline, job.id)
    assert len(records) >= 3
    assert {(status, reason, by) for _, status, reason, by in records} == {
        (RunStatus.SKIPPED, SkipReason.CALENDAR, endless.id)
    }
    assert records[0][0] == _at(1)


def test_a_defer_job_behind_chained_windows_runs_once_they_end(pipeline):
    # Weekdays, a 90-minute window every hour: one blackout from Monday 00:00 to Saturday 00:30. The clock starts
    # on Saturday 2026-11-21 at 12:00; Monday's 10:00 occurrence waits unwritten until Saturday 00:30.
    weekdays = _calendar(pipeline, [{"cron": "0 * * * 1-5", "duration_minutes": 90}])
    job = pipeline.create_job(schedule={"cron": "0 10 * * 1"}, calendars=[weekdays.id], on_blocked="DEFER")
    pipeline.clock.set(datetime(2026, 11, 23, 10, tzinfo=UTC))
    pipeline.tick()
    assert _records(pipeline, job.id) == []
    pipeline.clock.set(datetime(2026, 11, 28, 0, 30, tzinfo=UTC))
    pipeline.tick()
    [run] = pipeline.runs_of(job.id)
    assert (run.occurrence_at, run.blocked_by) == (datetime(2026, 11, 23, 10, tzinfo=UTC), weekdays.id)


def stored_calendar_whose_window_never_fires(pipeline: Any, tenant: str) -> Calendar:
    """A calendar as stored before a window's cron had to fire (written past today's check): its window never opens."""
    never = Calendar.model_construct(
        id="c" + "2" * 25,
        tenant=tenant,
        name="old",
        timezone="UTC",
        mode=CalendarMode.EXCLUDE,
        windows=[CronWindow.model_construct(cron="0 0 30 2 *", duration_minutes=60)],
        created_at=START,
        updated_at=START,
        version=1,
    )
    assert pipeline.services.calendars.records.put_new(never)
    return never


def test_a_stored_calendar_window_whose_cron_never_fires_blocks_nothing_and_the_tick_claims_on(pipeline):
    # Stored before a window's cron had to fire: read back, it opens never (it used to fail every claim).
    never = stored_calendar_whose_window_never_fires(pipeline, TENANT)
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, calendars=[never.id], on_blocked="DEFER")
    _tick_through(pipeline, 2)
    assert [(at, status) for at, status, _, _ in _records(pipeline, job.id)][:2] == [
        (_at(1), RunStatus.QUEUED),
        (_at(2), RunStatus.QUEUED),
    ]
    assert pipeline.services.calendars.get(TENANT, never.id).windows[0].cron == "0 0 30 2 *"
