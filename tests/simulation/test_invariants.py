"""Each invariant of the simulation (tests/simulation/model.py) can fail: a history that keeps every promise passes,
and each corrupted copy of it (a run record or an observation changed as a defect would change it) is caught by the
invariant it breaks, and by that one only. No AWS: the model is pure."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from tickwork.model.run import AttemptRecord, Run, RunError
from tickwork.model.states import AttemptOutcome, RunStatus, RunTrigger, SkipReason

from tests.harness import START
from tests.simulation.model import JOB_INVARIANTS, CalendarModel, JobModel, Model, violations

JOB = "j1"
NOW = START + timedelta(minutes=10)


def _at(minute: float) -> datetime:
    return START + timedelta(minutes=minute)


def _run(minute: int, *, ran: tuple[float, float] | None = None, **fields: Any) -> Run:
    """The scheduled run of the occurrence at START + `minute`, which ran [start, end) minutes if given."""
    record: dict[str, Any] = {
        "id": f"{JOB}.{minute}",
        "job_id": JOB,
        "tenant": "sim",
        "scheduled_for": _at(minute),
        "status": RunStatus.SUCCEEDED if ran else RunStatus.QUEUED,
    }
    if ran:
        start, end = ran
        record |= {
            "attempts": 1,
            "started_at": _at(start),
            "finished_at": _at(end),
            "attempt_history": [
                AttemptRecord(attempt=1, started_at=_at(start), ended_at=_at(end), outcome=AttemptOutcome.SUCCEEDED)
            ],
        }
    return Run.model_validate(record | fields)


def _history() -> tuple[Model, dict[str, list[Run]], dict[str, list[datetime]], Counter[tuple[str, int]]]:
    """A job firing every 2 minutes from 12:00, under SKIP, each run a minute long: all well."""
    job = JobModel(id=JOB, every_minutes=2, created_at=START, overlap="SKIP", max_backoff_seconds=5)
    runs = [_run(m, ran=(m, m + 1)) for m in (2, 4, 6, 8)]
    executions = {r.id: [r.scheduled_for] for r in runs}
    steps = Counter({(r.id, 0): 1 for r in runs})
    return Model(jobs={JOB: job}), {JOB: runs}, executions, steps


def test_a_history_that_keeps_every_promise_passes() -> None:
    model, runs, executions, steps = _history()
    assert violations(model, runs, executions, steps, NOW) == []


def _corrupt(name: str) -> tuple[Model, dict[str, list[Run]], dict[str, list[datetime]], Counter[tuple[str, int]]]:
    model, runs, executions, steps = _history()
    job, job_runs = model.jobs[JOB], runs[JOB]
    if name == "accounted_once":
        del job_runs[1]  # the 12:04 occurrence lost
    elif name == "not_early":
        job_runs[0] = _run(2, ran=(1.5, 2.5))
    elif name == "one_at_a_time":
        job_runs[1] = _run(4, ran=(4, 6.5))  # still running when the 12:06 run starts
    elif name == "started_runs_run_on":
        yielded = AttemptRecord(attempt=1, started_at=_at(8), ended_at=_at(8.5), outcome=AttemptOutcome.YIELDED)
        job_runs[3] = _run(8, status=RunStatus.SKIPPED, skip_reason=SkipReason.OVERLAP, attempt_history=[yielded])
    elif name == "within_backoff_cap":
        model.retry_waits.append((JOB, job_runs[3].id, 6))  # the cap is 5 s
    elif name == "no_timeout_on_work_that_fits":
        job_runs[3] = job_runs[3].model_copy(
            update={"status": RunStatus.FAILED, "error": RunError(type="RunTimeout", message="over max_run_seconds")}
        )
    elif name == "nothing_after_cancel":
        job.cancelled_at = _at(7)
        job.stop_modelling(_at(7))
        executions[job_runs[3].id] = [_at(8)]
    elif name == "steps_once":
        steps[(job_runs[0].id, 0)] = 2
    return model, runs, executions, steps


@pytest.mark.parametrize("name", [*JOB_INVARIANTS, "steps_once"])
def test_each_invariant_catches_the_history_that_breaks_it_and_only_it(name: str) -> None:
    broken = violations(*_corrupt(name), NOW)
    assert broken, f"{name} caught nothing"
    assert {line.split(":")[0] for line in broken} == {name}, broken


def test_a_skipped_invariant_is_not_checked() -> None:
    assert violations(*_corrupt("one_at_a_time"), NOW, skip=frozenset({"one_at_a_time"})) == []


def test_an_acknowledged_trigger_skipped_by_a_freeze_is_caught() -> None:
    model, runs, executions, steps = _history()
    trigger = _run(9, trigger=RunTrigger.MANUAL, status=RunStatus.SKIPPED, skip_reason=SkipReason.FREEZE)
    runs[JOB].append(trigger.model_copy(update={"id": "triggered"}))
    model.triggered.add("triggered")
    assert [line.split(":")[0] for line in violations(model, runs, executions, steps, NOW)] == ["started_runs_run_on"]


def test_a_step_done_again_after_a_restart_by_hand_is_allowed_once_more() -> None:
    model, runs, executions, steps = _corrupt("steps_once")
    model.restarted[runs[JOB][0].id] += 1
    assert violations(model, runs, executions, steps, NOW) == []


def _deferring_history(
    deferred_start: float,
) -> tuple[Model, dict[str, list[Run]], dict[str, list[datetime]], Counter[tuple[str, int]]]:
    """A DEFER job firing every 2 minutes from 12:00 behind a blackout from 12:00 to 12:07: its occurrences at
    12:02 and 12:04 collapsed (SKIPPED `calendar`), the one at 12:06 run from `deferred_start`; 12:08's on time."""
    blackout = CalendarModel(mode="exclude", cron="0 * * * *", duration_minutes=7)
    job = JobModel(JOB, 2, START, "SKIP", 5, calendar=blackout, on_blocked="DEFER")
    skipped = {"status": RunStatus.SKIPPED, "skip_reason": SkipReason.CALENDAR}
    deferred = _run(6, ran=(deferred_start, deferred_start + 0.5))
    runs = [
        _run(2, **skipped),
        _run(4, **skipped),
        deferred.model_copy(update={"nominal_at": _at(6), "scheduled_for": _at(deferred_start)}),
        _run(8, ran=(8, 9)),
    ]
    executions = {r.id: [r.started_at] for r in runs if r.started_at is not None}
    return Model(jobs={JOB: job}), {JOB: runs}, executions, Counter()


def test_a_deferred_occurrence_is_due_at_its_blackouts_end_and_not_before() -> None:
    model, runs, executions, steps = _deferring_history(7)
    assert violations(model, runs, executions, steps, NOW) == []
    assert violations(model, {JOB: []}, {}, steps, _at(8)) == []  # deferred to 12:07: not due before 12:09
    broken = violations(model, {JOB: []}, {}, steps, _at(9))
    assert broken == [f"accounted_once: job {JOB}: occurrence 12:{m:02} due by 12:09:00 has no run" for m in (2, 4, 6)]


def test_a_deferred_occurrence_run_inside_its_blackout_is_caught() -> None:
    model, runs, executions, steps = _deferring_history(6.5)
    assert violations(model, runs, executions, steps, NOW) == [
        f"accounted_once: job {JOB}: occurrence 12:06 deferred by its calendar ran at 12:06:30"
    ]


def _died_at(minute: float) -> AttemptRecord:
    return AttemptRecord(attempt=1, started_at=_at(minute))  # no end, no outcome: its executor died


def test_an_attempt_whose_executor_died_ran_as_long_as_its_handler() -> None:
    model, runs, executions, steps = _history()
    retried = _run(4, ran=(7, 7.5))  # its first attempt's executor died at 12:04; the next ran at 12:07
    retried.attempt_history.insert(0, _died_at(4))
    runs[JOB][1] = retried
    assert violations(model, runs, executions, steps, NOW) == []  # its handler never started: it held nothing
    model.handled = {retried.id: [(_at(4), _at(6.25))]}  # its handler ran past the 12:06 run's start
    assert [line.split(":")[0] for line in violations(model, runs, executions, steps, NOW)] == ["one_at_a_time"]
