"""Jitter: a deterministic offset in [0, J) per job and occurrence, spread uniformly, checked against the period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from tickwork.control.api_bodies import JobSpec
from tickwork.model.jitter import JitterTooLarge, check_jitter, jitter_offset_ms, jittered, jittered_times
from tickwork.model.schedule import Schedule

NOMINAL = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
JOB = "j01jd2k3m4n5p6q7r8s9t0v1w2"


def test_the_offset_is_deterministic_and_within_range():
    offsets = [jitter_offset_ms(JOB, NOMINAL + timedelta(minutes=i), 30) for i in range(1000)]
    assert offsets == [jitter_offset_ms(JOB, NOMINAL + timedelta(minutes=i), 30) for i in range(1000)]
    assert all(0 <= o < 30_000 for o in offsets)
    assert len(set(offsets)) > 900  # to the millisecond: almost every occurrence gets its own


def test_jobs_on_the_same_occurrence_get_different_offsets():
    offsets = {jitter_offset_ms(f"j{i:025d}", NOMINAL, 60) for i in range(100)}
    assert len(offsets) > 95


def test_no_jitter_is_no_offset_and_no_extra_fields():
    assert jitter_offset_ms(JOB, NOMINAL, 0) == 0
    assert jittered(JOB, NOMINAL, 0) == NOMINAL
    assert jittered_times(JOB, NOMINAL, 0) == {"scheduled_for": NOMINAL}


def test_a_jittered_run_starts_later_never_earlier():
    times = jittered_times(JOB, NOMINAL, 45)
    assert times["nominal_at"] == NOMINAL
    assert NOMINAL < times["scheduled_for"] < NOMINAL + timedelta(seconds=45)
    assert times["not_before"] == times["scheduled_for"] == jittered(JOB, NOMINAL, 45)


def test_offsets_over_1000_occurrences_are_uniform_by_chi_square():
    # 1,000 occurrences of a per-minute job with J = 60 s, in 10 bins of 6 s: 100 expected in each.
    bins = [0] * 10
    for i in range(1000):
        bins[jitter_offset_ms(JOB, NOMINAL + timedelta(minutes=i), 60) // 6000] += 1
    chi_square = sum((observed - 100) ** 2 / 100 for observed in bins)
    # The 99.9th percentile of chi-square with 9 degrees of freedom: a fair hash fails this once in 1,000 jobs,
    # and this job id is fixed, so the test is deterministic.
    assert chi_square < 27.88, bins
    # The check can fail: an offset that piles into the first bin is far outside it.
    skewed = [1000] + [0] * 9
    assert sum((observed - 100) ** 2 / 100 for observed in skewed) > 27.88


@pytest.mark.parametrize(
    ("schedule", "largest"),
    [
        (Schedule(rate="5 minutes"), 300),
        (Schedule(cron="*/15 * * * *"), 900),
        (Schedule(cron="0 9 * * 1-5"), 86_400),  # Monday to Friday: consecutive days
        (Schedule(cron="0 9,10 * * *"), 3600),  # the smallest gap, not the average
        (Schedule(cron="*/10 * * * * *"), 10),  # seconds first
    ],
)
def test_jitter_may_reach_the_shortest_period_but_not_exceed_it(schedule, largest):
    check_jitter(largest, schedule)
    with pytest.raises(JitterTooLarge, match=f"shortest period, {largest} s"):
        check_jitter(largest + 1, schedule)


def test_a_one_shot_has_no_period_to_exceed():
    check_jitter(86_400, Schedule(at=NOMINAL))


def _spec(**fields):
    body = {"name": "n", "type": "echo", "schedule": {"rate": "1 minute"}, **fields}
    return JobSpec.model_validate(body)


@pytest.mark.parametrize(("jitter", "message"), [(-1, "greater than or equal to 0"), (61, "shortest period, 60 s")])
def test_a_bad_jitter_is_refused_on_its_field(jitter, message):
    with pytest.raises(ValidationError) as refused:
        _spec(jitter_seconds=jitter)
    (error,) = refused.value.errors()
    assert error["loc"] == ("jitter_seconds",)
    assert message in error["msg"]


def test_jitter_is_optional_and_zero_by_default():
    assert _spec().jitter_seconds == 0
    assert _spec(jitter_seconds=60).jitter_seconds == 60
