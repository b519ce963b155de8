"""Deadlines' pure decisions (tickwork.model.deadlines): a run's deadline, whether it was missed, its slack, and
the latest a deadline may be."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from tickwork.model.deadlines import Deadline, OnMiss, longest_run_seconds, missed, slack_seconds
from tickwork.model.policies import RetryPolicy

AT = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)


def test_a_deadline_is_counted_from_the_occurrence_and_alerts_by_default():
    deadline = Deadline(within_seconds=3600)
    assert deadline.on_miss is OnMiss.ALERT
    assert deadline.due(AT) == AT + timedelta(hours=1)


@pytest.mark.parametrize("within", [0, -1])
def test_a_deadline_must_be_positive(within):
    with pytest.raises(ValidationError):
        Deadline(within_seconds=within)


def test_the_maximum_run_time_is_the_later_start_the_run_time_and_each_retrys_segment_and_backoff():
    retry = RetryPolicy(max_attempts=3, backoff_seconds=2, max_backoff_seconds=60)
    measures = {"timeout_seconds": 300, "max_run_seconds": 3600, "retry": retry}
    assert longest_run_seconds(**measures, misfire_grace_seconds=900, jitter_seconds=0) == 900 + 3600 + 2 * (300 + 60)
    # Jitter is counted from the occurrence: the later of the two is when the run may start.
    assert longest_run_seconds(**measures, misfire_grace_seconds=0, jitter_seconds=1800) == 1800 + 3600 + 2 * 360
    # A run time under the timeout bounds each segment too.
    short = {**measures, "max_run_seconds": 60}
    assert longest_run_seconds(**short, misfire_grace_seconds=0, jitter_seconds=0) == 60 + 2 * (60 + 60)


@pytest.mark.parametrize(
    ("finished_at", "now", "expected"),
    [
        (None, AT - timedelta(seconds=1), False),  # not ended, not yet due
        (None, AT, True),  # not ended at its deadline
        (AT - timedelta(seconds=1), AT + timedelta(hours=1), False),  # ended in time, looked at later
        (AT, AT + timedelta(hours=1), False),  # ended on the instant
        (AT + timedelta(milliseconds=1), AT + timedelta(hours=1), True),  # ended after it
    ],
)
def test_missed(finished_at, now, expected):
    assert missed(AT, finished_at=finished_at, now=now) is expected


def test_slack_is_negative_past_the_deadline():
    assert slack_seconds(AT, AT - timedelta(seconds=90)) == 90
    assert slack_seconds(AT, AT + timedelta(seconds=15)) == -15
