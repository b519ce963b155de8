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
from tests.simulation.model import JOB_INVARIANTS, JobModel, Model, violations

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
