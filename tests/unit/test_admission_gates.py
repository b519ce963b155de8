"""The executor's admission protocol (tickwork.executor.admission): each gate's answers, and what a refusal gives
back (the heartbeat's side, extending every hold: tests/unit/test_overlap_heartbeat.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from tickwork.executor.admission import (
    ADMIT,
    Admit,
    Admitted,
    AttemptsGate,
    Deferral,
    Entry,
    Fail,
    Held,
    Refused,
    Skip,
    admit,
)
from tickwork.executor.breaker import HeldBackGate
from tickwork.executor.limits import Holds, RunLimits
from tickwork.executor.overlap import OverlapGate, RunningSlot
from tickwork.model.ids import run_id_for
from tickwork.model.job import Job
from tickwork.model.policies import BreakerState, ConcurrencyLimit, OverlapPolicy, RetryPolicy
from tickwork.model.run import Run
from tickwork.model.run_target import RunTarget
from tickwork.model.states import DeferReason, JobState, RunStatus, SkipReason
from tickwork.model.tenant_settings import TenantSettings
from tickwork.store import RateAdmission
from tickwork.store.running_slots import SlotClaim

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
JOB_ID = "j01m7yzmhg01ta2se1vm8v9358"


def _run(**fields: Any) -> Run:
    return Run(
        id=run_id_for(JOB_ID, T0),
        job_id=JOB_ID,
        tenant="acme",
        scheduled_for=T0,
        status=RunStatus.RUNNING,
        attempts=fields.pop("attempts", 1),
        **fields,
    )


def _target(**fields: Any) -> RunTarget:
    base: dict[str, Any] = {
        "owner_id": JOB_ID,
        "tenant": "acme",
        "type": "echo",
        "payload": {},
        "retry": RetryPolicy(max_attempts=3),
        "timeout_seconds": 60,
    }
    return RunTarget(**{**base, **fields})


def _entry(target: RunTarget | None = None, **run: Any) -> Entry:
    return Entry(_run(**run), target or _target(), "owner", until=T0 + timedelta(seconds=60), now=T0)


class Recorder:
    """A hold that records what was done to it in a shared list; `lost`: another run took it."""

    shared_with_takeover: ClassVar[bool] = False

    def __init__(self, name: str, log: list[str], *, lost: bool = False) -> None:
        self.name, self.log, self.lost = name, log, lost

    def extend(self, until: datetime) -> list[str]:
        self.log.append(f"extend {self.name}")
        return [self.name] if self.lost else []

    def release(self) -> None:
        self.log.append(f"release {self.name}")

    def carry(self, until: datetime) -> None:
        self.log.append(f"carry {self.name}")


class RunKeyed(Recorder):
    shared_with_takeover: ClassVar[bool] = True


class Answering:
    def __init__(self, answer: Any, log: list[str]) -> None:
        self.answer, self.log = answer, log
        self.seen: list[Entry] = []

    def admit(self, entry: Entry) -> Any:
        self.seen.append(entry)
        self.log.append("asked")
        return self.answer


def test_the_attempts_gate_admits_within_the_retry_policy_and_fails_past_it():
    assert AttemptsGate().admit(_entry(attempts=3)) is ADMIT
    answer = AttemptsGate().admit(_entry(attempts=4))
    assert isinstance(answer, Fail)
    assert answer.error.type == "AttemptsExhausted"


class Breakers:
    def __init__(self, elects: bool) -> None:
        self.elects = elects
        self.asked = 0

    def elect_queued_probe(self, job: Job, run: Run, now: datetime) -> Job | None:
        self.asked += 1
        if not self.elects:
            return None
        assert job.breaker is not None
        return job.model_copy(update={"breaker": job.breaker.model_copy(update={"probe_at": run.occurrence_at})})


def _suspended_job() -> Job:
    job = Job.model_validate(
        {
            "id": JOB_ID,
            "tenant": "acme",
            "name": "n",
            "type": "echo",
            "payload": {},
            "schedule": {"cron": "* * * * *"},
            "created_at": T0,
            "updated_at": T0,
        }
    )
    breaker = BreakerState(opens_until=T0 - timedelta(minutes=1), cooldown_seconds=60, consecutive_failures=3)
    return job.model_copy(update={"state": JobState.SUSPENDED, "breaker": breaker})


def test_the_held_back_gate_skips_a_paused_run_and_admits_a_free_one_without_asking_the_breaker():
    breakers = Breakers(elects=True)
    gate = HeldBackGate(breakers)  # type: ignore[arg-type]
    assert gate.admit(_entry(_target(held_back=SkipReason.PAUSED))) == Skip(SkipReason.PAUSED)
    assert gate.admit(_entry()) is ADMIT
    assert breakers.asked == 0


def test_the_held_back_gate_admits_the_breakers_elected_probe_as_its_job_now_stands():
    run = _run()
    target = RunTarget.of_job(_suspended_job(), run)
    assert target.held_back is SkipReason.CIRCUIT_OPEN
    answer = HeldBackGate(Breakers(elects=True)).admit(_entry(target))  # type: ignore[arg-type]
    assert isinstance(answer, Admit)
    assert answer.hold is None
    assert answer.target is not None
    assert answer.target.held_back is None
    assert answer.target.job is not None
    assert answer.target.job.breaker is not None
    assert answer.target.job.breaker.probe_at == run.occurrence_at
    refused = HeldBackGate(Breakers(elects=False)).admit(_entry(target))  # type: ignore[arg-type]
    assert refused == Skip(SkipReason.CIRCUIT_OPEN)


class Slots:
    """The store's running slot, in memory."""

    def __init__(self, *, free: bool = True, extends: bool = True) -> None:
        self.free, self.extends = free, extends
        self.calls: list[str] = []

    def take_running_slot(self, job_id: str, **_: object) -> bool:
        self.calls.append("take")
        return self.free

    def extend_running_slot(self, job_id: str, **_: object) -> bool:
        self.calls.append("extend")
        return self.extends

    def release_running_slot(self, job_id: str, **_: object) -> None:
        self.calls.append("release")


def test_the_overlap_gate_costs_nothing_under_allow_and_admits_skip_with_the_running_slot_it_holds():
    slots = Slots()
    gate = OverlapGate(slots, None)  # type: ignore[arg-type]  # no run is asked to stop here
    assert gate.admit(_entry()) is ADMIT
    assert slots.calls == []
    answer = gate.admit(_entry(_target(overlap=OverlapPolicy.SKIP)))
    assert isinstance(answer, Admit)
    assert isinstance(answer.hold, RunningSlot)
    assert answer.hold.shared_with_takeover
    assert answer.hold.extend(T0) == []
    answer.hold.release()
    assert slots.calls == ["take", "extend", "release"]
    slots.extends = False
    assert answer.hold.extend(T0) == ["the job's running slot (its overlap policy)"]


def test_the_overlap_gate_skips_a_run_that_finds_the_slot_taken_under_skip():
    gate = OverlapGate(Slots(free=False), None)  # type: ignore[arg-type]
    assert gate.admit(_entry(_target(overlap=OverlapPolicy.SKIP))) == Skip(SkipReason.OVERLAP)


def test_a_yielded_run_whose_slot_another_run_took_waits_for_it_and_is_never_skipped():
    """Its slot lapsed in a gap between segments longer than it was kept for: begun, it waits (SKIP, or
    BUFFER_ONE with the wait slot taken too)."""
    slots = Slots(free=False)
    gate = OverlapGate(slots, None)  # type: ignore[arg-type]
    waits = Deferral(DeferReason.OVERLAP_BUFFER, 1)
    assert gate.admit(_entry(_target(overlap=OverlapPolicy.SKIP), segments=2)) == waits
    slots.claim_running_slot = lambda job_id, **_: SlotClaim(taken=False, holder="other")  # type: ignore[method-assign]
    slots.take_buffer_slot = lambda job_id, **_: False  # type: ignore[attr-defined]
    assert gate.admit(_entry(_target(overlap=OverlapPolicy.BUFFER_ONE), segments=2)) == waits
    assert gate.admit(_entry(_target(overlap=OverlapPolicy.BUFFER_ONE))) == Skip(SkipReason.OVERLAP)


def test_a_yielded_runs_next_segment_takes_its_own_slot_before_buffer_ones_waiter():
    slots = Slots(free=False)
    slots.claim_running_slot = lambda job_id, **_: SlotClaim(taken=False, buffered="waiter", own=True)  # type: ignore[attr-defined]
    answer = OverlapGate(slots, None).admit(_entry(_target(overlap=OverlapPolicy.BUFFER_ONE), segments=1))  # type: ignore[arg-type]
    assert isinstance(answer, Admit)
    assert isinstance(answer.hold, RunningSlot)
    assert slots.calls == ["extend"]
    answer.hold.carry(T0)  # it yields again
    assert slots.calls == ["extend", "extend"]


class Items:
    def __init__(self, *, full: bool = False) -> None:
        self.full = full

    def acquire(self, tenant: str, sort: str, **_: object) -> bool:
        return not self.full

    def extend(self, tenant: str, sort: str, **_: object) -> bool:
        return True

    def release(self, tenant: str, sort: str, **_: object) -> None: ...

    def admit_rate(self, tenant: str, sort: str, **_: object) -> RateAdmission:
        return RateAdmission(True, 0)


class Quotas:
    def settings_of(self, tenant: str) -> TenantSettings:
        return TenantSettings()


class Fixed:
    def random(self) -> float:
        return 1.0


def test_the_limits_gate_admits_with_its_holds_or_defers():
    keyed = _target(concurrency=ConcurrencyLimit(key="k", limit=1))
    answer = RunLimits(Items(), Quotas(), rng=Fixed()).admit(_entry(keyed))
    assert isinstance(answer, Admit)
    assert isinstance(answer.hold, Holds)
    assert not answer.hold.shared_with_takeover  # held by the lease's owner
    assert answer.hold.sorts == ["LIMIT#CONCURRENCY#k"]
    refused = RunLimits(Items(full=True), Quotas(), rng=Fixed()).admit(_entry(keyed))
    assert refused == Deferral(DeferReason.CONCURRENCY_KEY, 1)


def test_a_later_gates_refusal_gives_back_what_the_earlier_gates_admitted_last_taken_first():
    log: list[str] = []
    gates = [
        Answering(Admit(Recorder("slot", log)), log),
        Answering(Admit(Recorder("key", log)), log),
        Answering(Deferral(DeferReason.RATE_LIMIT, 2), log),
        Answering(ADMIT, log),
    ]
    refused = admit(gates, _entry())
    assert isinstance(refused, Refused)
    assert refused.refusal == Deferral(DeferReason.RATE_LIMIT, 2)
    assert log == ["asked", "asked", "asked"]  # the fourth gate never asked
    refused.held.release()  # by the executor, before it records the refusal
    assert log[3:] == ["release key", "release slot"]
    refused.held.release()
    assert len(log) == 5  # once


def test_a_yielded_runs_holds_are_carried_to_its_next_segment_once():
    log: list[str] = []
    held = Held([Recorder("slot", log), Recorder("key", log)])
    held.carry(T0)
    held.release()
    assert log == ["carry key", "carry slot"]  # nothing given back after


def test_a_refusal_by_the_first_gate_asks_no_other_and_holds_nothing():
    log: list[str] = []
    later = Answering(Admit(Recorder("slot", log)), log)
    refused = admit([Answering(Skip(SkipReason.PAUSED), log), later], _entry())
    assert isinstance(refused, Refused)
    assert refused.refusal == Skip(SkipReason.PAUSED)
    assert later.seen == []


def test_all_admitted_the_later_gates_see_the_target_an_earlier_one_replaced_and_every_hold_is_held():
    log: list[str] = []
    probe = _target(type="probe")
    later = Answering(Admit(Recorder("key", log)), log)
    admission = admit([Answering(Admit(Recorder("slot", log), target=probe), log), later], _entry())
    assert isinstance(admission, Admitted)
    assert later.seen[0].target is probe
    assert admission.entry.target is probe
    assert admission.held.extend(T0) == []
    admission.held.release()
    admission.held.release()  # once
    assert log == ["asked", "asked", "extend slot", "extend key", "release key", "release slot"]


def test_a_refusal_after_the_breaker_elected_its_probe_is_recorded_against_the_probe():
    probe = _target(type="probe")
    log: list[str] = []
    gates = [Answering(Admit(target=probe), log), Answering(Skip(SkipReason.OVERLAP), log)]
    refused = admit(gates, _entry())
    assert isinstance(refused, Refused)
    assert refused.entry.target is probe  # its skip settles the probe (the breaker reopens), not a held-back run


def test_holds_kept_past_the_executors_wait_are_not_given_back_and_a_lost_lease_leaves_the_runs_own():
    log: list[str] = []
    kept = Held([Recorder("key", log)])
    kept.keep_until_lease_ends()
    kept.release()
    assert log == []
    lost = Held([RunKeyed("slot", log), Recorder("key", log)])
    lost.lease_lost()  # the running slot is the run's, which the executor that took it over holds now
    lost.release()
    assert log == ["release key"]
