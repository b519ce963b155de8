"""tickwork.model.run_spec, pure: which jobs' runs carry a copy of the job, and when the executor may trust it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tickwork.model.ids import run_id_for
from tickwork.model.job import Job
from tickwork.model.messages import RunMessage
from tickwork.model.run import Run
from tickwork.model.run_spec import INLINE_SPEC_MAX_BYTES, SPEC_FRESH_FOR, spec_for, trusted_spec, with_specs
from tickwork.model.states import JobState, RunStatus, RunTrigger

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
JOB_ID = "j01m7yzmhg01ta2se1vm8v9358"


def _job(**fields: Any) -> Job:
    base: dict[str, Any] = {
        "id": JOB_ID,
        "tenant": "acme",
        "name": "copied",
        "type": "echo",
        "payload": {"greeting": "hello"},
        "schedule": {"cron": "* * * * *"},
        "created_at": T0,
        "updated_at": T0,
        "next_run_at": T0 + timedelta(minutes=5),
    }
    return Job.model_validate({**base, **fields})


def _message(at: datetime, job: Job | None = None) -> RunMessage:
    message = RunMessage(run_id=run_id_for(JOB_ID, at), job_id=JOB_ID, tenant="acme", scheduled_for=at)
    return message if job is None else with_specs([message], job)[0]


def _leased(at: datetime, **fields: Any) -> Run:
    return Run(
        id=run_id_for(JOB_ID, at),
        job_id=JOB_ID,
        tenant="acme",
        scheduled_for=at,
        status=RunStatus.RUNNING,
        attempts=fields.pop("attempts", 1),
        **fields,
    )


def test_an_active_plain_jobs_copy_holds_what_the_executor_needs() -> None:
    spec = spec_for(_job(retry={"max_attempts": 5}, timeout_seconds=30), last_occurrence=False)
    assert spec is not None
    assert (spec.type, spec.payload, spec.retry.max_attempts, spec.timeout_seconds) == (
        "echo",
        {"greeting": "hello"},
        5,
        30,
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"state": JobState.PAUSED},
        {"state": JobState.CANCELLED},
        {"overlap": "SKIP"},
        {"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 60}},
        {"payload": {"blob": "x" * INLINE_SPEC_MAX_BYTES}},
    ],
    ids=["paused", "cancelled", "overlap", "breaker", "too large"],
)
def test_jobs_whose_executor_must_read_them_get_no_copy(fields: dict[str, Any]) -> None:
    assert spec_for(_job(**fields), last_occurrence=False) is None


def test_only_the_latest_run_of_a_job_with_nothing_left_is_its_last() -> None:
    ats = [T0, T0 + timedelta(seconds=30), T0 + timedelta(seconds=60)]
    messages = [_message(at) for at in ats]
    ending = with_specs(messages, _job(next_run_at=None))
    assert [m.job.last_occurrence for m in ending if m.job] == [False, False, True]
    going_on = with_specs(messages, _job())
    assert [m.job.last_occurrence for m in going_on if m.job] == [False, False, False]


def test_the_copy_is_trusted_for_a_first_attempt_leased_in_time() -> None:
    message = _message(T0, _job())
    assert trusted_spec(message, _leased(T0), RunStatus.QUEUED, T0 + SPEC_FRESH_FOR) == message.job


@pytest.mark.parametrize(
    ("run_fields", "previous", "late"),
    [
        ({"attempts": 2}, RunStatus.RETRYING, timedelta(0)),  # a retry
        ({}, RunStatus.RUNNING, timedelta(0)),  # taken over from a dead executor
        ({"job_changed_at": T0}, RunStatus.QUEUED, timedelta(0)),  # its job changed since the claim
        ({}, RunStatus.QUEUED, SPEC_FRESH_FOR + timedelta(milliseconds=1)),  # leased long after its time
        ({"trigger": RunTrigger.MANUAL}, RunStatus.QUEUED, timedelta(0)),
        ({"requeues": 1}, RunStatus.QUEUED, timedelta(0)),  # retried by hand or redriven after it failed
    ],
    ids=["retry", "takeover", "job changed", "late", "manual", "requeued"],
)
def test_the_copy_is_not_trusted_where_it_may_be_out_of_date(
    run_fields: dict[str, Any], previous: RunStatus, late: timedelta
) -> None:
    message = _message(T0, _job())
    assert trusted_spec(message, _leased(T0, **run_fields), previous, T0 + late) is None


def test_a_message_without_a_copy_is_never_trusted() -> None:
    assert trusted_spec(_message(T0), _leased(T0), RunStatus.QUEUED, T0) is None
