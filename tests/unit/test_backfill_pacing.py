"""A backfill's pace (pure): one run a second, or its tenant's rate quota's pace when that is slower."""

from __future__ import annotations

from datetime import timedelta

from tickwork.control.backfill import backfill_spacing


def test_backfill_spacing_is_the_quota_s_pace_when_slower_than_one_a_second() -> None:
    assert backfill_spacing(None) == timedelta(seconds=1)
    assert backfill_spacing(600) == timedelta(seconds=1)  # 0.1 s: the backfill's own pace is slower
    assert backfill_spacing(60) == timedelta(seconds=1)
    assert backfill_spacing(7) == timedelta(milliseconds=8572)  # rounded up: never faster than the quota
