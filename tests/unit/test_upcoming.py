"""tickwork.model.upcoming: the next occurrence a reader is shown, claimed or not, against the tick's cursor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.model.upcoming import next_occurrence

T0 = datetime(2026, 11, 21, 14, 52, 15, tzinfo=UTC)


def _job(schedule: dict, **fields) -> Job:
    return Job.model_validate(
        {"id": "j1", "tenant": "acme", "name": "n", "type": "echo", "schedule": schedule}
        | {"created_at": T0 - timedelta(days=1), "updated_at": T0 - timedelta(days=1)}
        | fields
    )


def test_the_occurrences_claimed_ahead_of_the_cursor_come_first():
    job = _job({"cron": "* * * * *"}, next_run_at=datetime(2026, 11, 21, 14, 55, tzinfo=UTC))
    assert next_occurrence(job, T0) == datetime(2026, 11, 21, 14, 53, tzinfo=UTC)


def test_an_overdue_cursor_is_next_and_a_paused_jobs_cursor_stays():
    overdue = datetime(2026, 11, 21, 14, 50, tzinfo=UTC)
    assert next_occurrence(_job({"cron": "* * * * *"}, next_run_at=overdue), T0) == overdue
    ahead = datetime(2026, 11, 21, 14, 55, tzinfo=UTC)
    paused = _job({"cron": "* * * * *"}, next_run_at=ahead, state=JobState.PAUSED)
    assert next_occurrence(paused, T0) == ahead


def test_a_claimed_one_shot_has_its_instant_until_it_passes():
    at = datetime(2026, 11, 21, 14, 53, tzinfo=UTC)
    claimed = _job({"at": at.isoformat()}, next_run_at=None)
    assert next_occurrence(claimed, T0) == at
    assert next_occurrence(claimed, at + timedelta(seconds=1)) is None
