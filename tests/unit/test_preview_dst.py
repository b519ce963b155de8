"""Preview: the next occurrences with their wall times and DST flags, from the scheduler's own walk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from tickwork.model.preview import preview
from tickwork.model.schedule import Schedule

from tests.conftest import ROOT


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _items(cron: str, zone: str, after: str, count: int = 4) -> list[tuple[str, str | None]]:
    schedule = Schedule(cron=cron, timezone=zone)
    start = _at(after)
    return [(o.local, o.dst) for o in preview(schedule, after=start, count=count, anchor=start)]


# (zone, cron, from, the expected (local, dst) items)
DST_CASES = [
    # Paris springs forward at 02:00 to 03:00 on 2026-03-29: 02:30 does not exist and runs at the gap's end.
    (
        "Europe/Paris",
        "30 2 * * *",
        "2026-03-28T00:00:00Z",
        [
            ("2026-03-28T02:30:00.000+01:00", None),
            ("2026-03-29T03:00:00.000+02:00", "gap"),
            ("2026-03-30T02:30:00.000+02:00", None),
        ],
    ),
    # Paris falls back at 03:00 to 02:00 on 2026-10-25: 02:30 is shown twice and runs at its first instant.
    (
        "Europe/Paris",
        "30 2 * * *",
        "2026-10-24T00:00:00Z",
        [
            ("2026-10-24T02:30:00.000+02:00", None),
            ("2026-10-25T02:30:00.000+02:00", "fold"),
            ("2026-10-26T02:30:00.000+01:00", None),
        ],
    ),
    # New York: 02:00-03:00 skipped on 2026-03-08; every */20 of the gap fires once, at 03:00.
    (
        "America/New_York",
        "*/20 2 * * *",
        "2026-03-07T12:00:00Z",
        [
            ("2026-03-08T03:00:00.000-04:00", "gap"),
            ("2026-03-09T02:00:00.000-04:00", None),
            ("2026-03-09T02:20:00.000-04:00", None),
        ],
    ),
    # New York: 01:00-02:00 repeated on 2026-11-01.
    (
        "America/New_York",
        "30 1 * * *",
        "2026-10-31T00:00:00Z",
        [
            ("2026-10-31T01:30:00.000-04:00", None),
            ("2026-11-01T01:30:00.000-04:00", "fold"),
            ("2026-11-02T01:30:00.000-05:00", None),
        ],
    ),
    # Lord Howe moves by 30 minutes: 02:00 becomes 02:30 on 2026-10-04, so 02:15 runs at 02:30 (+11:00).
    (
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2026-10-02T00:00:00Z",
        [
            ("2026-10-03T02:15:00.000+10:30", None),
            ("2026-10-04T02:30:00.000+11:00", "gap"),
            ("2026-10-05T02:15:00.000+11:00", None),
        ],
    ),
    # ... and 02:00 goes back to 01:30 on 2026-04-05, so 01:45 is shown twice (first at +11:00).
    (
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-03T00:00:00Z",
        [
            ("2026-04-04T01:45:00.000+11:00", None),
            ("2026-04-05T01:45:00.000+11:00", "fold"),
            ("2026-04-06T01:45:00.000+10:30", None),
        ],
    ),
]


@pytest.mark.parametrize(("zone", "cron", "after", "expected"), DST_CASES, ids=[f"{c[0]} {c[1]}" for c in DST_CASES])
def test_preview_flags_gaps_and_folds(zone, cron, after, expected):
    assert _items(cron, zone, after, count=len(expected)) == expected


# The examples docs/cron.md gives, as it words them: (its words, zone, cron, from, the expected local instants).
DOC_EXAMPLES = [
    (
        "`0 0 29 2 */7` (February 29th on a Sunday) fires in 2032, 2060, 2088 and 2128.",
        "UTC",
        "0 0 29 2 */7",
        "2026-01-01T00:00:00Z",
        [
            "2032-02-29T00:00:00.000Z",
            "2060-02-29T00:00:00.000Z",
            "2088-02-29T00:00:00.000Z",
            "2128-02-29T00:00:00.000Z",
        ],
    ),
    (
        "`*/15 2 * * *` in New York on 2026-03-08 (02:00 becomes 03:00) runs once at 03:00 EDT, and next at 02:00 "
        "EDT on 2026-03-09.",
        "America/New_York",
        "*/15 2 * * *",
        "2026-03-08T05:00:00Z",
        ["2026-03-08T03:00:00.000-04:00", "2026-03-09T02:00:00.000-04:00"],
    ),
    (
        "`30 1 * * *` in New York on 2026-11-01 runs at 01:30 EDT only.",
        "America/New_York",
        "30 1 * * *",
        "2026-11-01T04:00:00Z",
        ["2026-11-01T01:30:00.000-04:00", "2026-11-02T01:30:00.000-05:00"],
    ),
]


@pytest.mark.parametrize(("words", "zone", "cron", "after", "expected"), DOC_EXAMPLES, ids=[c[2] for c in DOC_EXAMPLES])
def test_the_examples_of_docs_cron_md_hold(words, zone, cron, after, expected):
    doc = " ".join((ROOT / "docs" / "cron.md").read_text().split())
    assert words in doc
    assert [local for local, _ in _items(cron, zone, after, count=len(expected))] == expected


def test_preview_instants_are_the_scheduler_s_own():
    schedule = Schedule(cron="*/20 2 * * *", timezone="America/New_York")
    start = _at("2026-03-07T12:00:00Z")
    previewed = [o.at for o in preview(schedule, after=start, count=50, anchor=start, hash_key="j1")]
    assert previewed == list(schedule.occurrences(start, start + timedelta(days=400), anchor=start, hash_key="j1"))[:50]


def test_preview_of_a_lord_howe_fold_skips_the_second_pass():
    # 01:30-02:00 repeats on 2026-04-05; a */10 cron fires 01:30, 01:40, 01:50 once each (the first pass).
    items = _items("*/10 1 5 4 *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", count=6)
    assert [i for i in items if i[1] == "fold"] == [
        ("2026-04-05T01:30:00.000+11:00", "fold"),
        ("2026-04-05T01:40:00.000+11:00", "fold"),
        ("2026-04-05T01:50:00.000+11:00", "fold"),
    ]
    assert [local for local, _ in items].count("2026-04-05T01:30:00.000+10:30") == 0


def test_a_rate_is_real_time_and_only_flags_wall_times_shown_twice():
    schedule = Schedule(rate="30 minutes", timezone="Europe/Paris")
    start = _at("2026-10-25T00:00:00Z")
    items = [(o.local, o.dst) for o in preview(schedule, after=start, count=4, anchor=start)]
    assert items == [
        ("2026-10-25T02:30:00.000+02:00", "fold"),
        ("2026-10-25T02:00:00.000+01:00", "fold"),
        ("2026-10-25T02:30:00.000+01:00", "fold"),
        ("2026-10-25T03:00:00.000+01:00", None),
    ]


def test_a_one_shot_previews_once_and_utc_shows_z():
    start = _at("2026-12-01T00:00:00Z")
    schedule = Schedule(at=start + timedelta(hours=1))
    items = preview(schedule, after=start, count=5, anchor=start)
    assert [(o.at, o.local, o.dst) for o in items] == [(start + timedelta(hours=1), "2026-12-01T01:00:00.000Z", None)]


def test_preview_stops_at_end_at():
    start = _at("2026-12-01T00:00:00Z")
    schedule = Schedule(cron="0 * * * *", end_at=start + timedelta(hours=3))
    assert len(preview(schedule, after=start, count=10, anchor=start)) == 3


def test_preview_uses_the_hash_key_as_the_job_will():
    start = _at("2026-12-01T00:00:00Z")
    schedule = Schedule(cron="H * * * *")
    minutes = {preview(schedule, after=start, count=1, anchor=start, hash_key=f"j{i}")[0].at.minute for i in range(20)}
    assert len(minutes) > 1  # spread by job
    again = preview(schedule, after=start, count=1, anchor=start, hash_key="j7")
    assert again == preview(schedule, after=start, count=1, anchor=start, hash_key="j7")


# ---------------------------------------------------------------- never-firing schedules


@pytest.mark.parametrize("cron", ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 0 31 2 *"])
def test_a_cron_that_never_fires_is_refused_on_the_cron_field(cron):
    with pytest.raises(ValidationError) as refused:
        Schedule(cron=cron)
    (error,) = refused.value.errors()
    assert error["loc"] == ("cron",)
    assert "never fires" in error["msg"]
    assert "no occurrence in any year" in error["msg"]


@pytest.mark.parametrize("cron", ["0 0 29 2 *", "0 0 31 * *", "0 0 31 1-3 *", "0 0 30 2 1"])
def test_a_cron_that_fires_rarely_is_accepted(cron):
    schedule = Schedule(cron=cron)
    start = _at("2026-01-01T00:00:00Z")
    assert schedule.next_after(start, anchor=start) is not None
