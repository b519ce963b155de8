"""tickwork.model.calendars.blocked_spans: what a calendar blocks over a week, as the console's week strip draws
it (one bounded request): exclude windows and include gaps, clipped to the range, cut at their bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.model.calendars import MAX_BLOCKED_SPANS, blocked_spans

from tests.unit.test_calendar_blocking import calendar

MON = datetime(2026, 11, 23, tzinfo=UTC)
WEEK = timedelta(days=7)


def test_an_exclude_calendars_windows_are_its_blocked_spans_clipped_to_the_week():
    nightly = calendar([{"cron": "0 22 * * *", "duration_minutes": 240}])  # 22:00 to 02:00 each night
    found = blocked_spans(nightly, MON, MON + WEEK)
    assert found.complete
    assert found.spans[0] == (MON, MON + timedelta(hours=2))  # Sunday's window, clipped at the start
    assert found.spans[1] == (MON + timedelta(hours=22), MON + timedelta(days=1, hours=2))
    assert found.spans[-1] == (MON + timedelta(days=6, hours=22), MON + WEEK)  # clipped at the end
    assert len(found.spans) == 8


def test_an_include_calendar_blocks_everything_outside_its_windows():
    weekdays = calendar([{"cron": "0 9 * * MON-FRI", "duration_minutes": 480}], mode="include")
    found = blocked_spans(weekdays, MON, MON + WEEK)
    assert found.complete
    assert found.spans[0] == (MON, MON + timedelta(hours=9))
    assert found.spans[1] == (MON + timedelta(hours=17), MON + timedelta(days=1, hours=9))
    assert found.spans[-1] == (MON + timedelta(days=4, hours=17), MON + WEEK)  # Friday evening to the end
    assert len(found.spans) == 6


def test_a_calendar_of_more_windows_than_the_preview_holds_is_cut_and_says_so():
    every_minute = calendar([{"cron": "* * * * *", "duration_minutes": 1}, {"dates": ["2026-11-30"]}])
    found = blocked_spans(every_minute, MON, MON + WEEK)
    assert not found.complete
    assert len(found.spans) <= MAX_BLOCKED_SPANS
