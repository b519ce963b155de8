"""The executor's freeze gate (tickwork.executor.freeze_gate): which freeze blocks a run at its start, what its job's
catch-up keeps for the freeze's end, and the gate's reads (the environment's read of the freezes, kept
RECENT_READ_FOR; the freeze itself, read again before a run is refused)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from tickwork.executor.admission import ADMIT, Deferral, Entry, Skip
from tickwork.executor.freeze_gate import FreezeGate, freeze_over, kept_to_its_end
from tickwork.model.clock import FakeClock
from tickwork.model.freezes import EVERY_TENANT, Freeze, subject_to_freezes
from tickwork.model.job import Job
from tickwork.model.policies import CatchupPolicy
from tickwork.model.run import Run
from tickwork.model.run_target import RunTarget
from tickwork.model.states import DeferReason, RunTrigger, SkipReason
from tickwork.store.freezes import RECENT_READ_FOR, FreezeReads, StoredFreeze

from tests.unit.test_admission_gates import JOB_ID, T0
from tests.unit.test_admission_gates import _run as run_of_acme
from tests.unit.test_admission_gates import _target as target_of_acme

PAYMENTS = {"team": "payments"}


def _freeze(**fields: Any) -> Freeze:
    base: dict[str, Any] = {
        "id": "f01m7yzmhg01ta2se1vm8v9358",
        "tenant": "acme",
        "selector": {"tags": PAYMENTS},
        "from": T0 - timedelta(minutes=1),
        "until": T0 + timedelta(minutes=10),
        "reason": "deploy 1.42",
        "created_at": T0 - timedelta(minutes=1),
    }
    return Freeze.model_validate({**base, **fields})


def _run(**fields: Any) -> Run:
    return run_of_acme(**fields)


def _target(**fields: Any) -> RunTarget:
    return target_of_acme(**{"tags": PAYMENTS, **fields})


def _job(catchup: CatchupPolicy, cron: str = "*/5 * * * *") -> Job:
    return Job.model_validate(
        {
            "id": JOB_ID,
            "tenant": "acme",
            "name": "payments",
            "type": "echo",
            "schedule": {"cron": cron},
            "catchup": catchup,
            "tags": PAYMENTS,
            "created_at": T0 - timedelta(days=1),
            "updated_at": T0 - timedelta(days=1),
        }
    )


# ---------------------------------------------------------------- which freeze blocks a run at its start


def test_a_freeze_over_the_run_s_job_blocks_its_first_start_by_its_tags() -> None:
    frozen = _freeze()
    assert freeze_over([frozen], _run(), _target(), T0) == frozen
    assert freeze_over([frozen], _run(), _target(tags={"team": "search"}), T0) is None
    assert freeze_over([_freeze(tenant="globex")], _run(), _target(), T0) is None
    assert freeze_over([_freeze(tenant=EVERY_TENANT)], _run(), _target(), T0) is not None


@pytest.mark.parametrize(("leased", "attempts"), [(True, 1), (False, 0)])
def test_a_freeze_may_stop_only_a_scheduled_run_s_first_start(leased, attempts) -> None:
    """One rule for the executor (the run as leased: this start counted) and the creation's marking (as stored)."""

    def subject(**fields: Any) -> bool:
        return subject_to_freezes(_run(**{"attempts": attempts, **fields}), leased=leased)

    assert subject()
    assert not subject(attempts=attempts + 1)  # started before: it runs on
    assert not subject(segments=1)  # a durable run's next segment
    assert not subject(requeues=1)  # retried by hand, or redriven
    assert not subject(trigger=RunTrigger.MANUAL)  # a trigger's, debounced or not
    assert not subject(trigger=RunTrigger.BACKFILL)
    assert not subject(workflow_run_id="w01m7yzmhg01ta2se1vm8v9358.1", step_id="a")


def test_a_triggered_run_starts_with_no_read_of_the_freezes() -> None:
    records = Records(_freeze())
    gate, _ = _gate(records, FakeClock(T0))
    assert gate.admit(_entry(_run(trigger=RunTrigger.MANUAL), _target())) == ADMIT
    assert records.queries == 0


def test_a_freeze_blocks_only_an_occurrence_inside_it_while_it_holds() -> None:
    later = _freeze(**{"from": T0 + timedelta(seconds=1)})
    assert freeze_over([later], _run(), _target(), T0 + timedelta(seconds=2)) is None  # due before it began
    lifted = _freeze(lifted_at=T0 - timedelta(seconds=1))
    assert freeze_over([lifted], _run(), _target(), T0) is None


def test_of_two_freezes_over_a_run_the_one_ending_last_decides() -> None:
    short = _freeze(id="f01m7yzmhg01ta2se1vm8v9351", until=T0 + timedelta(minutes=2))
    long = _freeze(id="f01m7yzmhg01ta2se1vm8v9352", until=T0 + timedelta(minutes=20))
    assert freeze_over([short, long], _run(), _target(), T0) == long


@pytest.mark.parametrize(
    ("catchup", "next_minutes", "kept"),
    [
        (CatchupPolicy.LATEST, 15, True),  # its last occurrence inside the freeze
        (CatchupPolicy.LATEST, 5, False),  # a later one inside it is kept instead
        (CatchupPolicy.LATEST, None, True),
        (CatchupPolicy.ALL, 5, True),
        (CatchupPolicy.NONE, 15, False),
    ],
)
def test_defer_keeps_a_blocked_run_for_the_freeze_s_end_by_its_job_s_catch_up(catchup, next_minutes, kept) -> None:
    following = None if next_minutes is None else T0 + timedelta(minutes=next_minutes)
    assert kept_to_its_end(_freeze(on_blocked="DEFER"), catchup, following) is kept
    assert kept_to_its_end(_freeze(), catchup, following) is False  # SKIP keeps none


# ---------------------------------------------------------------- the gate's reads


class Records:
    def __init__(self, *freezes: Freeze) -> None:
        self.freezes = {f.id: f for f in freezes}
        self.queries = 0
        self.marked: list[tuple[str, str, bool, str | None]] = []
        self.fail = False

    def all_stored(self) -> list[StoredFreeze]:
        self.queries += 1
        if self.fail:
            raise RuntimeError("throttled")
        return [StoredFreeze(f) for f in self.freezes.values()]

    def get(self, freeze_id: str) -> Freeze | None:
        return self.freezes.get(freeze_id)

    def mark_claimed(self, run_id: str, freeze: Freeze, *, keep: bool, leased_by: str | None = None) -> bool:
        self.marked.append((run_id, freeze.id, keep, leased_by))
        return True


class Jobs:
    def __init__(self, job: Job | None) -> None:
        self.job, self.reads = job, 0

    def get_job(self, job_id: str) -> Job | None:
        self.reads += 1
        return self.job


def _gate(records: Records, clock: FakeClock, job: Job | None = None) -> tuple[FreezeGate, Jobs]:
    jobs = Jobs(job)
    return FreezeGate(records, FreezeReads(records, clock), jobs), jobs  # type: ignore[arg-type]


def _entry(run: Run, target: RunTarget, now: datetime = T0) -> Entry:
    return Entry(run, target, "owner-1", until=now + timedelta(minutes=1), now=now)


def test_a_run_the_creation_did_not_mark_is_marked_by_its_executor_and_skipped() -> None:
    frozen = _freeze()
    records = Records(frozen)
    gate, _ = _gate(records, FakeClock(T0))
    run = _run()
    assert gate.admit(_entry(run, _target())) == Skip(SkipReason.FREEZE)
    assert records.marked == [(run.id, frozen.id, False, "owner-1")]  # blocked_by the freeze, as its lease holds it


def test_a_defer_freeze_over_a_run_by_its_message_s_copy_reads_the_job_once_for_its_catch_up() -> None:
    frozen = _freeze(on_blocked="DEFER", until=T0 + timedelta(minutes=3))
    records = Records(frozen)
    gate, jobs = _gate(records, FakeClock(T0), _job(CatchupPolicy.LATEST))
    assert gate.admit(_entry(_run(), _target())) == Deferral(DeferReason.FREEZE, 180)
    assert jobs.reads == 1
    assert records.marked[0][2] is True  # kept: deferred_reason freeze


def test_a_freeze_lifted_since_the_environment_read_it_lets_the_run_run() -> None:
    frozen = _freeze()
    records = Records(frozen)
    clock = FakeClock(T0)
    gate, _ = _gate(records, clock)
    assert gate.admit(_entry(_run(), _target())) == Skip(SkipReason.FREEZE)  # read now: the freeze holds
    records.freezes[frozen.id] = frozen.model_copy(update={"lifted_at": T0 + timedelta(seconds=1)})
    clock.advance(2)
    assert gate.admit(_entry(_run(), _target(), clock.now())) == ADMIT  # the read still has it; its GetItem not
    assert records.queries == 1


def test_runs_no_freeze_blocks_cost_one_query_per_environment_per_recent_read_for() -> None:
    records = Records(_freeze(selector={"job_ids": ["j01m7yzmhg01ta2se1vm8v9999"]}))
    clock = FakeClock(T0)
    gate, jobs = _gate(records, clock)
    for _ in range(50):
        assert gate.admit(_entry(_run(), _target(), clock.now())) == ADMIT
        clock.advance(0.05)
    assert records.queries == 1
    clock.advance(RECENT_READ_FOR.total_seconds())
    assert gate.admit(_entry(_run(), _target(), clock.now())) == ADMIT
    assert (records.queries, jobs.reads, records.marked) == (2, 0, [])


def test_a_failed_read_of_the_freezes_goes_by_the_last_read_and_is_not_retried_per_run() -> None:
    frozen = _freeze()
    records = Records(frozen)
    clock = FakeClock(T0)
    gate, _ = _gate(records, clock)
    assert gate.admit(_entry(_run(), _target())) == Skip(SkipReason.FREEZE)
    records.fail = True
    clock.advance(RECENT_READ_FOR.total_seconds() + 1)
    for _ in range(3):
        assert gate.admit(_entry(_run(), _target(), clock.now())) == Skip(SkipReason.FREEZE)
    assert records.queries == 2  # tried again once per RECENT_READ_FOR, not once per run


def test_a_marked_run_reads_its_freeze_and_not_the_environment_s_read() -> None:
    frozen = _freeze(on_blocked="DEFER")
    records = Records(frozen)
    gate, _ = _gate(records, FakeClock(T0))
    marked = _run(blocked_by=frozen.id, deferred_reason=DeferReason.FREEZE)
    assert gate.admit(_entry(marked, _target())) == Deferral(DeferReason.FREEZE, 600)
    assert (records.queries, records.marked) == (0, [])


@pytest.mark.parametrize(
    "started", [{"segments": 1}, {"requeues": 1}, {"trigger": RunTrigger.MANUAL}], ids=["yielded", "retried", "trigger"]
)
def test_a_marked_run_that_is_no_first_scheduled_start_runs_on_without_reading_its_freeze(started) -> None:
    frozen = _freeze()
    records = Records(frozen)
    records.get = None  # type: ignore[assignment, method-assign]  # any read of the freeze fails the test
    gate, _ = _gate(records, FakeClock(T0))
    assert gate.admit(_entry(_run(blocked_by=frozen.id, **started), _target())) == ADMIT
    assert (records.queries, records.marked) == (0, [])


def test_a_marked_run_of_an_occurrence_inside_a_freeze_over_by_itself_is_skipped_however_late_it_starts() -> None:
    frozen = _freeze(until=T0 + timedelta(seconds=30))
    gate, _ = _gate(Records(frozen), FakeClock(T0))
    later = T0 + timedelta(minutes=1)  # its occurrence (T0) was inside the freeze; it starts after its end
    assert gate.admit(_entry(_run(blocked_by=frozen.id), _target(), later)) == Skip(SkipReason.FREEZE)
    lifted = frozen.model_copy(update={"lifted_at": T0 - timedelta(seconds=1)})
    gate, _ = _gate(Records(lifted), FakeClock(T0))
    assert gate.admit(_entry(_run(blocked_by=lifted.id), _target(), later)) == ADMIT  # lifted: its runs run
    kept = _run(blocked_by=frozen.id, deferred_reason=DeferReason.FREEZE)
    gate, _ = _gate(Records(frozen.model_copy(update={"on_blocked": "DEFER"})), FakeClock(T0))
    assert gate.admit(_entry(kept, _target(), later)) == ADMIT  # kept for its end
