"""Schedule math: properties over random schedules, and the named DST cases."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tickwork.model.clock import to_ms
from tickwork.model.schedule import END_OF_TIME, Schedule, resolve_wall_time

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")

crons = st.sampled_from(
    ["*/5 * * * *", "0 9 * * MON-FRI", "30 2 * * *", "0 0 1 * *", "15 */3 * * *", "*/20 * * * * *", "0 0 29 2 *"]
)
zones = st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"])
instants = st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC))
rates = st.sampled_from(["1 second", "45 seconds", "5 minutes", "1 hour", "3 days"])


@settings(max_examples=150, deadline=None)
@given(cron=crons, zone=zones, instant=instants)
def test_cron_next_is_strictly_after_and_increasing(cron: str, zone: str, instant: datetime) -> None:
    schedule = Schedule(cron=cron, timezone=zone)
    seq = schedule.occurrences(instant, instant + timedelta(days=1500), anchor=ANCHOR, limit=6)
    assert seq, "a valid cron fires within four years"
    assert seq[0] > instant
    assert all(a < b for a, b in itertools.pairwise(seq))


@settings(max_examples=100, deadline=None)
@given(rate=rates, instant=instants, start_offset=st.integers(0, 10**6), span=st.integers(1, 10**7))
def test_rate_stays_within_start_and_end(rate: str, instant: datetime, start_offset: int, span: int) -> None:
    start = ANCHOR + timedelta(seconds=start_offset)
    end = start + timedelta(seconds=span)
    schedule = Schedule(rate=rate, start_at=start, end_at=end)
    seq = schedule.occurrences(instant, end + timedelta(days=1), anchor=ANCHOR, limit=5)
    assert all(start <= t <= end for t in seq)
    assert all(t > instant for t in seq)
    assert all(a < b for a, b in itertools.pairwise(seq))


@settings(max_examples=100, deadline=None)
@given(cron=crons, zone=zones, instant=instants, days=st.integers(1, 60))
def test_cron_respects_end_at(cron: str, zone: str, instant: datetime, days: int) -> None:
    end = instant + timedelta(days=days)
    schedule = Schedule(cron=cron, timezone=zone, start_at=instant, end_at=end)
    seq = schedule.occurrences(instant - timedelta(days=1), end + timedelta(days=400), anchor=ANCHOR, limit=50)
    assert all(instant <= t <= end for t in seq)


def _local(seq: list[datetime], zone: ZoneInfo) -> list[str]:
    return [t.astimezone(zone).isoformat() for t in seq]


def test_paris_spring_gap_runs_once_at_the_end_of_the_gap() -> None:
    # 2026-03-29: clocks go 02:00 -> 03:00 in Paris; 02:30 does not exist that day.
    schedule = Schedule(cron="30 2 * * *", timezone="Europe/Paris")
    seq = schedule.occurrences(datetime(2026, 3, 28, 12, tzinfo=UTC), datetime(2026, 3, 31, tzinfo=UTC), anchor=ANCHOR)
    assert _local(seq, PARIS) == ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]


def test_paris_autumn_repeat_runs_once() -> None:
    # 2026-10-25: clocks go 03:00 -> 02:00 in Paris; 02:30 happens twice, the job runs at the first.
    schedule = Schedule(cron="30 2 * * *", timezone="Europe/Paris")
    seq = schedule.occurrences(
        datetime(2026, 10, 24, 12, tzinfo=UTC), datetime(2026, 10, 27, tzinfo=UTC), anchor=ANCHOR
    )
    assert _local(seq, PARIS) == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]


def test_new_york_spring_gap_collapses_every_skipped_wall_time_into_one_run() -> None:
    # 2026-03-08: 02:00 -> 03:00 in New York. 02:00, 02:15, 02:30, 02:45 do not exist.
    schedule = Schedule(cron="*/15 2-3 * * *", timezone="America/New_York")
    seq = schedule.occurrences(
        datetime(2026, 3, 8, 5, tzinfo=UTC), datetime(2026, 3, 8, 8, 1, tzinfo=UTC), anchor=ANCHOR
    )
    assert _local(seq, NEW_YORK) == [
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T03:15:00-04:00",
        "2026-03-08T03:30:00-04:00",
        "2026-03-08T03:45:00-04:00",
    ]


def test_new_york_autumn_repeat_runs_each_wall_time_once() -> None:
    # 2026-11-01: 02:00 -> 01:00 in New York; the 01:xx hour happens twice.
    schedule = Schedule(cron="0,30 1 * * *", timezone="America/New_York")
    seq = schedule.occurrences(
        datetime(2026, 11, 1, 4, tzinfo=UTC), datetime(2026, 11, 1, 8, tzinfo=UTC), anchor=ANCHOR
    )
    assert _local(seq, NEW_YORK) == ["2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00"]


def test_created_during_the_repeated_hour_does_not_rerun_the_first_pass() -> None:
    # At 01:10 EST (second pass), 01:30 EDT has already happened: next is tomorrow.
    schedule = Schedule(cron="30 1 * * *", timezone="America/New_York")
    instant = datetime(2026, 11, 1, 6, 10, tzinfo=UTC)  # 01:10 EST
    nxt = schedule.next_after(instant, anchor=ANCHOR)
    assert nxt is not None
    assert nxt.astimezone(NEW_YORK).isoformat() == "2026-11-02T01:30:00-05:00"


def test_resolve_wall_time_in_gap_is_the_transition() -> None:
    assert resolve_wall_time(datetime(2026, 3, 29, 2, 30), PARIS) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_seconds_field_comes_first() -> None:
    schedule = Schedule(cron="*/15 * * * * *")
    seq = schedule.occurrences(ANCHOR, ANCHOR + timedelta(minutes=1), anchor=ANCHOR)
    assert [t.second for t in seq] == [15, 30, 45, 0]


def test_rate_without_start_fires_one_period_after_creation() -> None:
    created = datetime(2026, 1, 1, 0, 0, 7, 500000, tzinfo=UTC)
    schedule = Schedule(rate="5 minutes")
    assert schedule.next_after(created, anchor=created) == datetime(2026, 1, 1, 0, 5, 7, tzinfo=UTC)


def test_rate_with_start_fires_at_start() -> None:
    start = datetime(2026, 2, 1, tzinfo=UTC)
    schedule = Schedule(rate="1 hour", start_at=start)
    assert schedule.next_after(ANCHOR, anchor=ANCHOR) == start


def test_at_fires_once() -> None:
    at = datetime(2026, 5, 1, tzinfo=UTC)
    schedule = Schedule(at=at)
    assert schedule.next_after(ANCHOR, anchor=ANCHOR) == at
    assert schedule.next_after(at, anchor=ANCHOR) is None


def test_hash_spreads_jobs_but_is_stable() -> None:
    schedule = Schedule(cron="H * * * *")
    minutes = {schedule.next_after(ANCHOR, anchor=ANCHOR, hash_key=f"job{i}").minute for i in range(40)}  # type: ignore[union-attr]
    assert len(minutes) > 10
    first = schedule.next_after(ANCHOR, anchor=ANCHOR, hash_key="job1")
    assert first == schedule.next_after(ANCHOR, anchor=ANCHOR, hash_key="job1")


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"cron": "61 * * * *"}, "cron", "not valid"),
        ({"cron": "* * *"}, "cron", "5 fields"),
        ({"cron": "0 0 31 4 *"}, "cron", "never fires"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "timezone", "unknown time zone"),
        ({"rate": "0 minutes"}, "rate", "at least 1 second"),
        ({"rate": "fortnightly"}, "rate", "rate must look like"),
        ({"at": "2026-01-01T00:00:00Z", "cron": "* * * * *"}, "", "exactly one of"),
        ({}, "", "exactly one of"),
        ({"rate": "1 hour", "start_at": "2026-02-01T00:00:00Z", "end_at": "2026-01-01T00:00:00Z"}, "", "end_at"),
        ({"at": "not a date"}, "at", "ISO-8601"),
        ({"rate": "1 hour", "every": 3}, "every", "Extra inputs"),
    ],
)
def test_bad_schedules_name_the_field(kwargs: dict, field: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        Schedule(**kwargs)
    err = info.value.errors()[0]
    assert ".".join(str(p) for p in err["loc"]) == field
    assert fragment.lower() in err["msg"].lower()


# ---------------------------------------------------------------- the cron dialect (issue #9)


def _days(cron: str, n: int = 40) -> list[datetime]:
    return Schedule(cron=cron).occurrences(ANCHOR, ANCHOR + timedelta(days=3000), anchor=ANCHOR, limit=n)


def _sunday_is_0(t: date) -> int:
    return t.isoweekday() % 7


@pytest.mark.parametrize(
    ("cron", "matches"),
    [
        # Either field starting with `*` (even `*/2`): the day must match both fields.
        ("59 * 4,15,21 * */2", lambda t: t.day in (4, 15, 21) and _sunday_is_0(t) in (0, 2, 4, 6)),
        ("0 0 */2 * MON", lambda t: t.day % 2 == 1 and _sunday_is_0(t) == 1),
        ("0 0 13 * *", lambda t: t.day == 13),
        ("0 0 * * 5", lambda t: _sunday_is_0(t) == 5),
        ("0 0 13 * ?", lambda t: t.day == 13),
        # Both restricted: either field may match (Vixie's OR).
        ("0 0 13 * 5", lambda t: t.day == 13 or _sunday_is_0(t) == 5),
        ("0 0 1,15 * 1-5", lambda t: t.day in (1, 15) or 1 <= _sunday_is_0(t) <= 5),
    ],
)
def test_dom_and_dow_are_anded_when_either_starts_with_star(cron: str, matches: Callable[[date], bool]) -> None:
    seq = _days(cron)
    assert len(seq) == 40
    assert all(matches(t) for t in seq), [t.strftime("%a %d") for t in seq if not matches(t)]
    # ...and no matching day in between was skipped.
    first, last = seq[0].date(), seq[-1].date()
    every_day = (first + timedelta(days=i) for i in range((last - first).days + 1))
    assert {t.date() for t in seq} == {d for d in every_day if matches(d)}


def _last_day(t: date) -> bool:
    return (t + timedelta(days=1)).day == 1


@pytest.mark.parametrize(
    ("cron", "matches"),
    [
        # Thirty days and L: croniter reads any 31-item day-of-month list as `*` (every day).
        ("0 0 2-31,L * *", lambda t: t.day >= 2),  # every month's last day is in 2-31 already
        ("0 0 1-29,31,L * *", lambda t: t.day != 30 or _last_day(t)),  # the 30th only as a last day
        ("0 0 1-27,29-31,L * *", lambda t: t.day != 28 or _last_day(t)),
        ("0 0 1-30,L * *", lambda t: True),  # the 31st is a last day wherever there is one
        ("0 0 2-31,L * */1", lambda t: t.day >= 2),
        ("0 0 2-31,L * MON", lambda t: t.day >= 2 or _sunday_is_0(t) == 1),
    ],
)
def test_thirty_days_and_l_fire_only_on_the_days_they_name(cron: str, matches: Callable[[date], bool]) -> None:
    seq = _days(cron, n=400)
    first, last = seq[0].date(), seq[-1].date()
    every_day = (first + timedelta(days=i) for i in range((last - first).days + 1))
    assert {t.date() for t in seq} == {d for d in every_day if matches(d)}


def _next_n(cron: str, n: int = 3, *, zone: str = "UTC", after: datetime = ANCHOR) -> list[str]:
    seq = Schedule(cron=cron, timezone=zone).occurrences(after, after + timedelta(days=1500), anchor=ANCHOR, limit=n)
    return [t.astimezone(ZoneInfo(zone)).strftime("%a %Y-%m-%d %H:%M:%S") for t in seq]


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("15-15 * * * *", ["Thu 2026-01-01 00:15:00", "Thu 2026-01-01 01:15:00", "Thu 2026-01-01 02:15:00"]),
        ("0 3-3 * * *", ["Thu 2026-01-01 03:00:00", "Fri 2026-01-02 03:00:00", "Sat 2026-01-03 03:00:00"]),
        ("0 0 * * 1-1", ["Mon 2026-01-05 00:00:00", "Mon 2026-01-12 00:00:00", "Mon 2026-01-19 00:00:00"]),
        ("0 0 * * MON-MON", ["Mon 2026-01-05 00:00:00", "Mon 2026-01-12 00:00:00", "Mon 2026-01-19 00:00:00"]),
        ("0 0 1 JAN-JAN *", ["Fri 2027-01-01 00:00:00", "Sat 2028-01-01 00:00:00", "Mon 2029-01-01 00:00:00"]),
        ("0 0 5-5 * *", ["Mon 2026-01-05 00:00:00", "Thu 2026-02-05 00:00:00", "Thu 2026-03-05 00:00:00"]),
        ("10,15-15 0 * * *", ["Thu 2026-01-01 00:10:00", "Thu 2026-01-01 00:15:00", "Fri 2026-01-02 00:10:00"]),
        ("15-15/5 0 * * *", ["Thu 2026-01-01 00:15:00", "Fri 2026-01-02 00:15:00", "Sat 2026-01-03 00:15:00"]),
        ("30-30 0 0 * * *", ["Thu 2026-01-01 00:00:30", "Fri 2026-01-02 00:00:30", "Sat 2026-01-03 00:00:30"]),
    ],
)
def test_single_value_range_is_not_whole_field(cron: str, expected: list[str]) -> None:
    assert _next_n(cron) == expected


def test_start_at_a_fraction_after_an_occurrence_excludes_it() -> None:
    start = datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=UTC)  # 1 µs after a */5 occurrence (found by Hypothesis)
    schedule = Schedule(cron="*/5 * * * *", start_at=start)
    assert schedule.next_after(start - timedelta(days=1), anchor=ANCHOR) == datetime(2025, 1, 1, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize("cron", ["R * * * *", "0 R * * *", "r/15 * * * *", "R(0-29) * * * *", "0 0 R * * *"])
def test_random_r_is_rejected(cron: str) -> None:
    # croniter's R draws a new random value every time the expression is evaluated: a random number of runs.
    with pytest.raises(ValidationError) as info:
        Schedule(cron=cron)
    err = info.value.errors()[0]
    assert err["loc"] == ("cron",)
    assert "`R` (random) is not supported" in err["msg"]


@pytest.mark.parametrize(
    ("macro", "expected"),
    [
        ("@yearly", ["Fri 2027-01-01 00:00:00", "Sat 2028-01-01 00:00:00"]),
        ("@annually", ["Fri 2027-01-01 00:00:00", "Sat 2028-01-01 00:00:00"]),
        ("@monthly", ["Sun 2026-02-01 00:00:00", "Sun 2026-03-01 00:00:00"]),
        ("@weekly", ["Sun 2026-01-04 00:00:00", "Sun 2026-01-11 00:00:00"]),
        ("@daily", ["Fri 2026-01-02 00:00:00", "Sat 2026-01-03 00:00:00"]),
        ("@midnight", ["Fri 2026-01-02 00:00:00", "Sat 2026-01-03 00:00:00"]),
        ("@hourly", ["Thu 2026-01-01 01:00:00", "Thu 2026-01-01 02:00:00"]),
        ("@DAILY", ["Fri 2026-01-02 00:00:00", "Sat 2026-01-03 00:00:00"]),
    ],
)
def test_macros_fire_at_their_fixed_times_not_hashed(macro: str, expected: list[str]) -> None:
    schedule = Schedule(cron=macro)
    for job in ("job1", "job2", "j01m7yzmhg0000000000000000"):
        seq = schedule.occurrences(ANCHOR, ANCHOR + timedelta(days=800), anchor=ANCHOR, hash_key=job, limit=2)
        assert [t.strftime("%a %Y-%m-%d %H:%M:%S") for t in seq] == expected


@pytest.mark.parametrize(("macro", "fragment"), [("@reboot", "@reboot is not supported"), ("@fortnightly", "unknown")])
def test_reboot_and_unknown_macros_are_rejected(macro: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        Schedule(cron=macro)
    err = info.value.errors()[0]
    assert err["loc"] == ("cron",)
    assert fragment in err["msg"]


def _rejected(cron: str) -> str:
    with pytest.raises(ValidationError) as info:
        Schedule(cron=cron)
    err = info.value.errors()[0]
    assert err["loc"] == ("cron",)
    return err["msg"]


@pytest.mark.parametrize("cron", ["0 0 * * THU-SUN", "5-1 * * * *", "0 22-2 * * *", "0 0 * NOV-FEB *", "0 0 25-5 * *"])
def test_wrapping_range_is_rejected(cron: str) -> None:
    assert "runs backwards" in _rejected(cron)


@pytest.mark.parametrize(
    ("cron", "hint"),
    [
        ("0 0 * * THU-SUN", "Sunday is also 7, so write THU-7"),
        ("0 0 * * fri-sun/2", "Sunday is also 7, so write FRI-7/2"),
        ("0 22-2 * * *", "split it in two: 22-23,0-2"),
        ("0 0 * NOV-FEB *", "split it in two: 11-12,1-2"),
    ],
)
def test_wrapping_range_error_says_how_to_write_it(cron: str, hint: str) -> None:
    assert _rejected(cron).endswith(hint)


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("0 9 * * 5L", ["Fri 2026-01-30 09:00:00", "Fri 2026-02-27 09:00:00", "Fri 2026-03-27 09:00:00"]),
        ("0 9 * * FRIL", ["Fri 2026-01-30 09:00:00", "Fri 2026-02-27 09:00:00", "Fri 2026-03-27 09:00:00"]),
        ("0 9 ? * 0L,1#1", ["Mon 2026-01-05 09:00:00", "Sun 2026-01-25 09:00:00", "Mon 2026-02-02 09:00:00"]),
        ("0 9 * * 7L", ["Sun 2026-01-25 09:00:00", "Sun 2026-02-22 09:00:00", "Sun 2026-03-29 09:00:00"]),
    ],
)
def test_last_weekday_of_month_5L_is_supported(cron: str, expected: list[str]) -> None:
    assert _next_n(cron) == expected


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("0 9 * * MON#2", ["Mon 2026-01-12 09:00:00", "Mon 2026-02-09 09:00:00", "Mon 2026-03-09 09:00:00"]),
        ("0 9 * * 5#5", ["Fri 2026-01-30 09:00:00", "Fri 2026-05-29 09:00:00", "Fri 2026-07-31 09:00:00"]),
        ("0 9 * * 7#1", ["Sun 2026-01-04 09:00:00", "Sun 2026-02-01 09:00:00", "Sun 2026-03-01 09:00:00"]),
        ("0 0 L * *", ["Sat 2026-01-31 00:00:00", "Sat 2026-02-28 00:00:00", "Tue 2026-03-31 00:00:00"]),
        ("0 0 L 2 *", ["Sat 2026-02-28 00:00:00", "Sun 2027-02-28 00:00:00", "Tue 2028-02-29 00:00:00"]),
        ("0 0 15,L * *", ["Thu 2026-01-15 00:00:00", "Sat 2026-01-31 00:00:00", "Sun 2026-02-15 00:00:00"]),
        ("0 0 L * 1", ["Mon 2026-01-05 00:00:00", "Mon 2026-01-12 00:00:00", "Mon 2026-01-19 00:00:00"]),
        ("0 0 L * */3", ["Sat 2026-01-31 00:00:00", "Sat 2026-02-28 00:00:00", "Sun 2026-05-31 00:00:00"]),
        ("0 0 ? * MON", ["Mon 2026-01-05 00:00:00", "Mon 2026-01-12 00:00:00", "Mon 2026-01-19 00:00:00"]),
        ("0 0 1 * ?", ["Thu 2026-01-01 00:00:00", "Sun 2026-02-01 00:00:00", "Sun 2026-03-01 00:00:00"]),
        ("0 0 10/10 * *", ["Sat 2026-01-10 00:00:00", "Tue 2026-01-20 00:00:00", "Fri 2026-01-30 00:00:00"]),
        ("0 0 * * 5-7", ["Fri 2026-01-02 00:00:00", "Sat 2026-01-03 00:00:00", "Sun 2026-01-04 00:00:00"]),
    ],
)
def test_kept_extensions_fire_as_documented(cron: str, expected: list[str]) -> None:
    assert _next_n(cron, after=ANCHOR - timedelta(microseconds=1)) == expected


@pytest.mark.parametrize(
    ("cron", "fragment"),
    [
        ("0 0 15W * *", "`W` (nearest weekday) is not supported"),
        ("0 0 LW * *", "`W` (nearest weekday) is not supported"),
        ("0 0 L-3 * *", "`L` must stand alone"),
        ("0 0 20-L * *", "`L` must stand alone"),
        ("0 0 * * L", "`L` alone"),
        ("0 0 15 * 5#2", "day-of-month must be * or ?"),
        ("0 0 1-7 * FRIL", "day-of-month must be * or ?"),
        ("0 0 * * 1,5#2", "cannot be mixed"),
        ("0 0 * * 5#6", "out of range 1-5"),
        ("0 0 * * MON-FRI#2", "a single day"),
        ("? * * * *", "`?` is only allowed"),
        ("61 * * * *", "out of range 0-59"),
        ("0 24 * * *", "out of range 0-23"),
        ("0 0 0 * *", "out of range 1-31"),
        ("0 0 * 13 *", "out of range 1-12"),
        ("0 0 * * 8", "out of range 0-7"),
        ("0 0 * JANUARY *", "unknown value"),
        ("0 MON * * *", "unknown value"),
        ("*/0 * * * *", "step must be at least 1"),
        ("1,,2 * * * *", "not valid"),
        ("H,5 * * * *", "`H` must be the whole field"),
        ("H(30-10) * * * *", "H(low-high) needs low < high"),
        ("H(0-60) * * * *", "out of range 0-59"),
        ("0 0 * * * * *", "5 fields"),
    ],
)
def test_unsupported_cron_syntax_is_rejected_naming_cron(cron: str, fragment: str) -> None:
    msg = _rejected(cron)
    assert msg.startswith("Value error, cron expression")
    assert fragment in msg


@pytest.mark.parametrize("cron", ["0 0 H * *", "0 0 H/7 * *", "H H H * *"])
def test_hashed_day_of_month_fires_every_month(cron: str) -> None:
    # H in day-of-month draws from 1-28, as in Jenkins: with 1-31, one job in ten ran only in some months.
    schedule = Schedule(cron=cron)
    for i in range(60):
        seq = schedule.occurrences(ANCHOR, ANCHOR + timedelta(days=365), anchor=ANCHOR, hash_key=f"job{i}")
        assert {t.month for t in seq} == set(range(1, 13)), f"job{i}"
        assert all(t.day <= 28 for t in seq)


@pytest.mark.parametrize(
    "cron", ["0 0 30 H *", "0 0 H(29-31) 2 *", "0 0 31 H(1-4) *", "0 0 H(30-31) 4,6 *", "0 0 30,31 2 */2"]
)
def test_cron_that_never_fires_for_some_jobs_is_rejected(cron: str) -> None:
    # H draws once per job: an expression that never fires for some draws is rejected for every job.
    with pytest.raises(ValidationError, match="never fires"):
        Schedule(cron=cron)


@pytest.mark.parametrize(
    "cron", ["0 0 H(1-31) * *", "0 0 29 2 *", "0 0 30 H(3-5) *", "0 0 30 2 1", "0 0 L H *", "0 0 29,30 2 */2"]
)
def test_cron_that_fires_for_every_job_is_accepted(cron: str) -> None:
    Schedule(cron=cron)


def test_rare_cron_is_found_decades_ahead() -> None:
    # Feb 29th on a Sunday: 2088, then 2128. The search is not capped at 30 years.
    schedule = Schedule(cron="0 0 29 2 */7")
    nxt = schedule.next_after(datetime(2089, 1, 1, tzinfo=UTC), anchor=ANCHOR)
    assert nxt == datetime(2128, 2, 29, tzinfo=UTC)


@pytest.mark.parametrize(
    "schedule",
    [Schedule(cron="0 0 29 2 */7"), Schedule(cron="0 0 1 1 *", timezone="America/New_York"), Schedule(rate="366 days")],
)
def test_a_schedule_ends_at_the_end_of_time(schedule: Schedule) -> None:
    # The last instant a run id names (13 digits of milliseconds): no occurrence after it, rather than an error
    # where Python's calendar ends.
    assert len(str(to_ms(END_OF_TIME))) == 13
    assert to_ms(END_OF_TIME + timedelta(milliseconds=1)) == 10**13
    walk = list(itertools.islice(schedule.iter_after(ANCHOR, anchor=ANCHOR), 10_000))
    assert END_OF_TIME - timedelta(days=41 * 366) < walk[-1] <= END_OF_TIME
    assert schedule.next_after(walk[-1], anchor=ANCHOR) is None
    assert schedule.next_after(END_OF_TIME, anchor=ANCHOR) is None


def test_rare_cron_fires_in_every_year_it_names() -> None:
    # Feb 29th on a Sunday, to 2200: 28 years apart, 40 across 2100 (not a leap year).
    walk = Schedule(cron="0 0 29 2 */7").iter_after(ANCHOR, anchor=ANCHOR)
    years = [t.year for t in itertools.takewhile(lambda t: t.year < 2200, walk)]
    assert years == [2032, 2060, 2088, 2128, 2156, 2184]


@pytest.mark.parametrize(
    ("cron", "zone", "shortest"),
    [
        # 01:45 standard time, then 03:00 summer time: the spring-forward day's 15 minutes, 17 days past the
        # first 400 occurrences (2026-01-01 to 01-17).
        ("0,45 1-23/2 * * *", "America/New_York", timedelta(minutes=15)),
        ("0,45 1-23/2 * * *", "Europe/Paris", timedelta(minutes=15)),
        ("0,45 1-23/2 * * *", "Australia/Sydney", timedelta(minutes=15)),  # springs forward in October
        # Lord Howe goes from 02:00 to 02:30: 02:15 fires at 02:30, a quarter of an hour before 02:45.
        ("15,45 */2 * * *", "Australia/Lord_Howe", timedelta(minutes=15)),
        ("0,45 1-23/2 * * *", "UTC", timedelta(minutes=45)),
        # Saturday midnight is more than a day before the change: the week across it is an hour short.
        ("0 0 * * 6", "America/New_York", timedelta(days=7) - timedelta(hours=1)),
        ("*/10 * * * * *", "Europe/Paris", timedelta(seconds=10)),
    ],
)
def test_shortest_period_sees_the_gaps_dst_shortens(cron: str, zone: str, shortest: timedelta) -> None:
    assert Schedule(cron=cron, timezone=zone).shortest_period() == shortest


LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


@pytest.mark.parametrize(
    ("cron", "zone", "instant", "expected"),
    [
        # 2026-11-01 New York: 02:00 EDT -> 01:00 EST. At 01:10 EST every 01:xx wall time has already fired.
        ("* * * * * *", NEW_YORK, datetime(2026, 11, 1, 6, 10, tzinfo=UTC), "2026-11-01T02:00:00-05:00"),
        ("* * * * *", NEW_YORK, datetime(2026, 11, 1, 6, 10, tzinfo=UTC), "2026-11-01T02:00:00-05:00"),
        ("* * * * * *", NEW_YORK, datetime(2026, 11, 1, 6, 0, tzinfo=UTC), "2026-11-01T02:00:00-05:00"),
        ("* * * * * *", NEW_YORK, datetime(2026, 11, 1, 6, 59, 59, 999999, tzinfo=UTC), "2026-11-01T02:00:00-05:00"),
        ("*/10 * * * * *", NEW_YORK, datetime(2026, 11, 1, 5, 59, 55, tzinfo=UTC), "2026-11-01T02:00:00-05:00"),
        ("0 5 * * *", NEW_YORK, datetime(2026, 11, 1, 6, 10, tzinfo=UTC), "2026-11-01T05:00:00-05:00"),
        # 2026-10-25 Paris: 03:00 CEST -> 02:00 CET.
        ("* * * * * *", PARIS, datetime(2026, 10, 25, 1, 10, tzinfo=UTC), "2026-10-25T03:00:00+01:00"),
        # 2026-04-05 Lord Howe: 02:00 (+11) -> 01:30 (+10:30); only half an hour repeats.
        ("* * * * * *", LORD_HOWE, datetime(2026, 4, 4, 15, 10, tzinfo=UTC), "2026-04-05T02:00:00+10:30"),
        ("*/15 * * * *", LORD_HOWE, datetime(2026, 4, 4, 15, 0, tzinfo=UTC), "2026-04-05T02:00:00+10:30"),
        # In the first pass the next wall time is simply the next one.
        ("* * * * * *", NEW_YORK, datetime(2026, 11, 1, 5, 10, tzinfo=UTC), "2026-11-01T01:10:01-04:00"),
    ],
)
def test_seconds_cron_in_repeated_hour_finds_next_fire(
    cron: str, zone: ZoneInfo, instant: datetime, expected: str
) -> None:
    nxt = Schedule(cron=cron, timezone=str(zone)).next_after(instant, anchor=ANCHOR)
    assert nxt is not None
    assert nxt.astimezone(zone).isoformat() == expected


def test_outage_ending_in_a_repeated_hour_does_not_complete_the_job() -> None:
    from tickwork.model.claim_plan import ClaimableJob, plan_claim

    now = datetime(2026, 11, 1, 6, 25, tzinfo=UTC)  # 01:25 EST; the grace cut, 01:10 EST, is in the repeat
    job = ClaimableJob(
        job_id="j" + "0" * 25,
        tenant="t",
        priority=5,
        schedule=Schedule(cron="* * * * * *", timezone="America/New_York"),
        version=1,
        next_run_at=datetime(2026, 11, 1, 3, tzinfo=UTC),  # down since 23:00 EDT: over 10,000 missed seconds
        created_at=ANCHOR,
        misfire_grace=timedelta(minutes=15),
    )
    plan = plan_claim(job, now=now, horizon_end=now + timedelta(seconds=120))
    assert plan.capped is not None
    assert plan.next_run_at == datetime(2026, 11, 1, 7, tzinfo=UTC)  # 02:00 EST
    assert not plan.complete


some_crons = st.sampled_from(
    [
        "* * * * * *",
        "*/7 * * * * *",
        "*/15 * * * *",
        "30 1-3 * * *",
        "0,30 1,2 * * *",
        "H H(0-3) * * *",
        "0 0 L * *",
        "0 9 * * 5L",
        "@daily",
        "0 0 29 2 *",
    ]
)
some_rates = st.sampled_from(["1 second", "45 seconds", "5 minutes", "1 hour", "3 days"])
# Around the 2026 transitions of the zones below, and anywhere.
near_transitions = st.sampled_from(
    [
        datetime(2026, 3, 8, 7, tzinfo=UTC),
        datetime(2026, 11, 1, 6, tzinfo=UTC),
        datetime(2026, 3, 29, 1, tzinfo=UTC),
        datetime(2026, 10, 25, 1, tzinfo=UTC),
        datetime(2026, 4, 4, 15, tzinfo=UTC),
        datetime(2026, 10, 3, 15, 30, tzinfo=UTC),
    ]
).flatmap(lambda t: st.integers(-2 * 3600 * 10**6, 2 * 3600 * 10**6).map(lambda us: t + timedelta(microseconds=us)))
any_instant = st.one_of(near_transitions, instants)


@st.composite
def schedules(draw: st.DrawFn) -> Schedule:
    kind = draw(st.sampled_from(["cron", "cron", "rate", "at"]))
    bounds: dict = {}
    if draw(st.booleans()):
        bounds["start_at"] = draw(any_instant)
    if draw(st.booleans()):
        bounds["end_at"] = (bounds.get("start_at") or draw(any_instant)) + timedelta(
            seconds=draw(st.integers(1, 10**6))
        )
    if kind == "at":
        return Schedule(at=draw(any_instant), **bounds)
    if kind == "rate":
        return Schedule(rate=draw(some_rates), **bounds)
    return Schedule(cron=draw(some_crons), timezone=draw(zones), **bounds)


@settings(max_examples=150, deadline=None)
@given(schedule=schedules(), instant=any_instant, job=st.sampled_from(["job1", "job2", None]))
def test_iter_after_yields_the_same_sequence_as_repeated_next_after(
    schedule: Schedule, instant: datetime, job: str | None
) -> None:
    by_next: list[datetime] = []
    cursor: datetime | None = instant
    while len(by_next) < 40 and (cursor := schedule.next_after(cursor, anchor=ANCHOR, hash_key=job)) is not None:
        by_next.append(cursor)
    by_iter = list(itertools.islice(schedule.iter_after(instant, anchor=ANCHOR, hash_key=job), 40))
    assert by_iter == by_next


def test_iter_after_reuses_one_croniter(monkeypatch: pytest.MonkeyPatch) -> None:
    import tickwork.model.schedule as module

    made: list[object] = []
    real = module.croniter

    def counting(*args: object, **kwargs: object) -> object:
        made.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    schedule = Schedule(cron="* * * * * *", timezone="America/New_York")
    monkeypatch.setattr(module, "croniter", counting)
    seq = schedule.occurrences(
        datetime(2026, 11, 1, 5, tzinfo=UTC), datetime(2026, 11, 1, 9, tzinfo=UTC), anchor=ANCHOR, limit=10_000
    )
    assert len(seq) == 10_000
    assert len(made) == 1
    # Through New York's repeated hour: 01:00-01:59:59 EDT once, then straight on from 02:00 EST.
    assert seq[3598].astimezone(NEW_YORK).isoformat() == "2026-11-01T01:59:59-04:00"
    assert seq[3599].astimezone(NEW_YORK).isoformat() == "2026-11-01T02:00:00-05:00"
