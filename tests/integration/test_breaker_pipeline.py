"""The circuit breaker (docs/policies.md, "Circuit breaker") through the real tick and executor: it opens after
N consecutive failed runs, records occurrences SKIPPED circuit_open while open, probes after the cooldown
(a failed probe doubles it, a successful one closes it), and a resume closes it."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, StrictBool
from tickwork.aws.queues import Outgoing
from tickwork.control.api_bodies import JobUpdate
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import JobState, RunStatus, SkipReason

from tests.harness import START

MINUTE = timedelta(minutes=1)
BREAKER = {"failure_threshold": 2, "cooldown_seconds": 120}


class SwitchPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fail: StrictBool = False


if "breaker_switch" not in registry:

    @job_type("breaker_switch", SwitchPayload)
    def breaker_switch(payload: SwitchPayload, ctx: RunContext) -> dict[str, Any]:
        if payload.fail:
            raise RuntimeError("told to fail")
        return {"ok": True}


@pytest.fixture
def emitted(monkeypatch):
    """The metrics the code adds, by name (the EMF output is disabled in tests)."""
    from tickwork.control import job_lifecycle
    from tickwork.executor import breaker

    names: Counter[str] = Counter()

    def record(name: str, **_: Any) -> None:
        names[name] += 1

    monkeypatch.setattr(breaker.metrics, "add_metric", record)
    monkeypatch.setattr(job_lifecycle.metrics, "add_metric", record)
    return names


def _at(minute: int):
    return START + minute * MINUTE


def _failing_job(pipeline, **spec):
    spec.setdefault("circuit_breaker", BREAKER)
    return pipeline.create_job(
        type="breaker_switch",
        payload={"fail": True},
        schedule={"cron": "* * * * *"},
        retry={"max_attempts": 1},
        **spec,
    )


def _execute(pipeline, job_id: str, minute: int) -> RunStatus:
    """Run the occurrence at `minute` at its time (a jittered run's own, later one): its message as the tick
    sends it, but without the delay (moto delays in real time), through the real executor."""
    run = pipeline.run(run_id_for(job_id, _at(minute)))
    pipeline.clock.set(run.scheduled_for)
    body = Outgoing.for_run(run).message.model_dump_json()
    url = pipeline.resources.queue_urls[Band.NORMAL.value]
    pipeline.sqs.send_message(QueueUrl=url, MessageBody=body)
    messages = [m for m in pipeline.receive(Band.NORMAL) if m["Body"] == body]
    assert messages, "the run's message was not received"
    pipeline.deliver(Band.NORMAL, messages[:1])
    return pipeline.run(run.id).status


def _job(pipeline, job_id):
    job = pipeline.services.store.jobs.get_job(job_id)
    assert job is not None
    return job


def _record(pipeline, job_id, minute):
    run = pipeline.run(run_id_for(job_id, _at(minute)))
    return run.status, run.skip_reason


def test_breaker_opens_after_n_consecutive_failures(pipeline, emitted):
    job = _failing_job(pipeline)  # 12:01 and 12:02 are claimed at create
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED
    after_one = _job(pipeline, job.id)
    assert (after_one.state, after_one.consecutive_failures) == (JobState.ACTIVE, 1)
    assert _execute(pipeline, job.id, 2) is RunStatus.FAILED
    opened = _job(pipeline, job.id)
    assert opened.state is JobState.SUSPENDED
    assert opened.suspended_reason == "2 consecutive failed runs"
    assert opened.suspended_at == _at(2)
    assert opened.breaker is not None
    assert (opened.breaker.opens_until, opened.breaker.cooldown_seconds) == (_at(4), 120)
    assert opened.breaker.consecutive_failures == 2
    assert emitted["CircuitOpened"] == 1


def test_breaker_success_resets_the_count(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 2, "cooldown_seconds": 60})
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED
    pipeline.services.jobs.update("default", job.id, JobUpdate.model_validate({"payload": {"fail": False}}))
    assert _execute(pipeline, job.id, 2) is RunStatus.SUCCEEDED
    assert _job(pipeline, job.id).consecutive_failures == 0
    pipeline.services.jobs.update("default", job.id, JobUpdate.model_validate({"payload": {"fail": True}}))
    pipeline.tick()  # 12:03, 12:04
    assert _execute(pipeline, job.id, 3) is RunStatus.FAILED
    assert _job(pipeline, job.id).state is JobState.ACTIVE  # one failure since the success: still closed


def test_breaker_open_skips_then_probes_failing_then_succeeding(pipeline, emitted):
    job = _failing_job(pipeline)
    _execute(pipeline, job.id, 1)
    _execute(pipeline, job.id, 2)  # opens until 12:04
    report = pipeline.tick()  # at 12:02: 12:03 (inside the cooldown) is still to come: recorded at its time
    assert report["skipped"] == 0
    pipeline.clock.set(_at(3))
    report = pipeline.tick()  # at 12:03: 12:03 is circuit_open, 12:04 is the probe (queued ahead)
    assert report["skipped"] == 1
    assert _record(pipeline, job.id, 3) == (RunStatus.SKIPPED, SkipReason.CIRCUIT_OPEN)
    assert _record(pipeline, job.id, 4) == (RunStatus.QUEUED, None)
    half_open = _job(pipeline, job.id)
    assert half_open.breaker is not None
    assert half_open.breaker.probe_at == _at(4)

    # The probe fails: suspended again, the cooldown doubled (240 s from 12:04).
    assert _execute(pipeline, job.id, 4) is RunStatus.FAILED
    reopened = _job(pipeline, job.id)
    assert reopened.state is JobState.SUSPENDED
    assert reopened.breaker is not None
    assert (reopened.breaker.cooldown_seconds, reopened.breaker.opens_until) == (240, _at(8))
    assert reopened.breaker.probe_at is None
    assert emitted["CircuitProbe"] == 1

    pipeline.tick()  # at 12:04: 12:05 is still to come
    pipeline.clock.set(_at(7))
    pipeline.tick()  # at 12:07: 12:05 to 12:07 (open), 12:08 (the probe)
    for minute in (5, 6, 7):
        assert _record(pipeline, job.id, minute) == (RunStatus.SKIPPED, SkipReason.CIRCUIT_OPEN)
    assert _record(pipeline, job.id, 8) == (RunStatus.QUEUED, None)

    # Fixed while suspended: a PATCH keeps it suspended until the probe.
    fixed = pipeline.services.jobs.update("default", job.id, JobUpdate.model_validate({"payload": {"fail": False}}))
    assert fixed.state is JobState.SUSPENDED
    assert _execute(pipeline, job.id, 8) is RunStatus.SUCCEEDED
    closed = _job(pipeline, job.id)
    assert closed.state is JobState.ACTIVE
    assert (closed.breaker, closed.consecutive_failures, closed.suspended_reason) == (None, 0, None)
    assert emitted["CircuitClosed"] == 1
    assert emitted["CircuitProbe"] == 2
    pipeline.tick()  # 12:09, 12:10 run again
    assert _record(pipeline, job.id, 9) == (RunStatus.QUEUED, None)
    # Every occurrence has exactly one record.
    runs = pipeline.runs_of(job.id)
    assert Counter(r.scheduled_for for r in runs) == Counter(_at(m) for m in range(1, 11))


def test_breaker_holds_back_runs_claimed_before_it_opened(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 600})
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED  # opens; 12:02 was queued at create
    assert _job(pipeline, job.id).state is JobState.SUSPENDED
    assert _execute(pipeline, job.id, 2) is RunStatus.SKIPPED
    assert _record(pipeline, job.id, 2) == (RunStatus.SKIPPED, SkipReason.CIRCUIT_OPEN)


def test_breaker_manual_resume_closes_it(pipeline, emitted):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 3600})
    _execute(pipeline, job.id, 1)
    assert _job(pipeline, job.id).state is JobState.SUSPENDED
    resumed = pipeline.services.jobs.resume("default", job.id)
    assert resumed.state is JobState.ACTIVE
    assert (resumed.breaker, resumed.consecutive_failures, resumed.suspended_at) == (None, 0, None)
    assert _job(pipeline, job.id).state is JobState.ACTIVE
    assert emitted["CircuitClosed"] == 1
    pipeline.tick()  # at 12:01: 12:03 runs again (no probe awaited)
    assert _record(pipeline, job.id, 3) == (RunStatus.QUEUED, None)


def test_breaker_suspended_job_cannot_be_paused_but_can_be_cancelled(pipeline):
    from tickwork.model.errors import Conflict

    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 3600})
    _execute(pipeline, job.id, 1)
    with pytest.raises(Conflict):
        pipeline.services.jobs.pause("default", job.id)
    assert pipeline.services.jobs.cancel("default", job.id).state is JobState.CANCELLED
    assert _job(pipeline, job.id).next_run_at is None


def _calls_of_one_run(pipeline, job_id: str, minute: int) -> Counter[str]:
    pipeline.calls.clear()
    _execute(pipeline, job_id, minute)
    calls = pipeline.calls.by_operation()
    # The test's own send, receive and delete are not the run's.
    for op in ("SendMessage", "ReceiveMessage", "DeleteMessageBatch"):
        calls.pop(op, None)
    return calls


def test_breaker_costs_nothing_for_a_job_without_one(pipeline):
    spec = {"type": "breaker_switch", "schedule": {"cron": "* * * * *"}, "retry": {"max_attempts": 1}}
    breaker = {"failure_threshold": 3, "cooldown_seconds": 60}
    plain = pipeline.create_job(**spec)
    guarded = pipeline.create_job(**spec, circuit_breaker=breaker)
    plain_calls = _calls_of_one_run(pipeline, plain.id, 1)
    # A run of a job without a breaker, as before the breaker existed: its run, its job and its result's reads,
    # the lease and the outcome, the message's visibility, the result object, the tenant's settings (read
    # once, then kept for 30 s: the second run does not read them) and the freezes (kept 5 s: nor those).
    assert plain_calls == Counter(
        {"GetItem": 3, "UpdateItem": 2, "ChangeMessageVisibility": 1, "BatchGetItem": 1, "PutObject": 1, "Query": 1}
    )
    plain_calls.pop("BatchGetItem")
    plain_calls.pop("Query")
    # With a breaker and no failure behind it, a successful run costs the same.
    assert _calls_of_one_run(pipeline, guarded.id, 1) == plain_calls

    # A failed run: the breaker's count is one UpdateItem more, and only for the job that has a breaker.
    fix = JobUpdate.model_validate({"payload": {"fail": True}})
    pipeline.services.jobs.update("default", plain.id, fix)
    pipeline.services.jobs.update("default", guarded.id, fix)
    plain_failed = _calls_of_one_run(pipeline, plain.id, 2)
    guarded_failed = _calls_of_one_run(pipeline, guarded.id, 2)
    plain_failed.pop("BatchGetItem", None)  # the settings' 30 s are over: read again by whichever runs first
    plain_failed.pop("Query", None)  # and the freezes' 5 s
    assert guarded_failed - plain_failed == Counter({"UpdateItem": 1})
    assert plain_failed - guarded_failed == Counter()


def test_breaker_resumed_in_its_cooldown_runs_the_occurrences_after_the_resume(pipeline):
    """An open breaker records an occurrence SKIPPED circuit_open when its time comes, not ahead of it: a
    resume during the cooldown must find the next occurrences unclaimed, so they run (a record made ahead would
    say `circuit_open` for an instant at which the breaker was closed, and the resumed job would not run)."""
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 3600})
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED  # opens at 12:01; 12:02 was queued at create
    pipeline.tick()  # at 12:01, while open
    assert pipeline.services.store.runs.get_run(run_id_for(job.id, _at(3))) is None  # still to come: no record yet
    pipeline.clock.set(_at(1) + timedelta(seconds=30))
    assert pipeline.services.jobs.resume("default", job.id).state is JobState.ACTIVE
    pipeline.tick()
    assert _record(pipeline, job.id, 3) == (RunStatus.QUEUED, None)
    runs = pipeline.runs_of(job.id)
    assert Counter(r.scheduled_for for r in runs) == Counter(_at(m) for m in range(1, 4))


def test_breaker_records_circuit_open_skips_as_their_time_comes(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 3600})
    _execute(pipeline, job.id, 1)  # opens at 12:01 until 13:01
    for minute in (2, 3, 4):
        pipeline.clock.set(_at(minute))
        pipeline.tick()
    # By 12:04 every occurrence up to 12:04 has its record, and none after it.
    assert _record(pipeline, job.id, 3) == (RunStatus.SKIPPED, SkipReason.CIRCUIT_OPEN)
    assert _record(pipeline, job.id, 4) == (RunStatus.SKIPPED, SkipReason.CIRCUIT_OPEN)
    assert pipeline.services.store.runs.get_run(run_id_for(job.id, _at(5))) is None


def test_breaker_a_run_claimed_before_it_opened_is_the_probe_once_the_cooldown_ends(pipeline, emitted):
    """A cooldown shorter than the claim horizon: the runs claimed before the breaker opened are already queued,
    and the first of them due from the cooldown's end is the probe (elected by the executor), not an occurrence
    past the horizon."""
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 60})
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED  # opens at 12:01 until 12:02; 12:02 queued at create
    pipeline.tick()  # at 12:01: 12:02 is on its way, so the claim names no probe
    opened = _job(pipeline, job.id).breaker
    assert opened is not None
    assert opened.probe_at is None
    pipeline.services.jobs.update("default", job.id, JobUpdate.model_validate({"payload": {"fail": False}}))
    assert _execute(pipeline, job.id, 2) is RunStatus.SUCCEEDED  # the probe, with the fixed payload
    closed = _job(pipeline, job.id)
    assert (closed.state, closed.breaker) == (JobState.ACTIVE, None)
    assert emitted["CircuitClosed"] == 1
    pipeline.tick()  # at 12:02: 12:03 and 12:04 run again
    assert _record(pipeline, job.id, 3) == (RunStatus.QUEUED, None)
    runs = pipeline.runs_of(job.id)
    assert Counter(r.scheduled_for for r in runs) == Counter(_at(m) for m in range(1, 5))


def test_breaker_a_failing_elected_probe_reopens_it_with_the_cooldown_doubled(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 60})
    _execute(pipeline, job.id, 1)  # opens until 12:02
    assert _execute(pipeline, job.id, 2) is RunStatus.FAILED  # elected probe, still failing
    reopened = _job(pipeline, job.id)
    assert reopened.state is JobState.SUSPENDED
    assert reopened.breaker is not None
    assert (reopened.breaker.cooldown_seconds, reopened.breaker.opens_until) == (120, _at(4))
    assert reopened.breaker.probe_at is None


def test_breaker_the_claim_names_the_probe_if_the_queued_one_never_came(pipeline):
    job = _failing_job(pipeline, circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 60})
    _execute(pipeline, job.id, 1)  # opens until 12:02; 12:02's message is never delivered here
    pipeline.clock.set(_at(5))  # 12:02 is more than QUEUED_PROBE_WAIT (2 min) past its time
    pipeline.tick()
    named = _job(pipeline, job.id).breaker
    assert named is not None
    assert named.probe_at == _at(3)
    assert _record(pipeline, job.id, 3) == (RunStatus.QUEUED, None)
    assert _record(pipeline, job.id, 4) == (RunStatus.SKIPPED, SkipReason.CIRCUIT_OPEN)
    # The queued 12:02 arriving now is not a second probe.
    assert _execute(pipeline, job.id, 2) is RunStatus.SKIPPED


def test_a_jittered_jobs_circuit_breaker_probes_and_closes(pipeline, emitted):
    """A jittered run starts after its occurrence (`scheduled_for` later than `nominal_at`), while the claim
    names the probe by the occurrence: the executor must know the probe by the occurrence too, or it records
    the probe SKIPPED circuit_open, no claim names another, and the job stays SUSPENDED for ever."""
    job = _failing_job(pipeline, jitter_seconds=30)
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED
    assert _execute(pipeline, job.id, 2) is RunStatus.FAILED  # opens for 120 s from 12:02 and its offset
    assert _job(pipeline, job.id).state is JobState.SUSPENDED
    pipeline.services.jobs.update("default", job.id, JobUpdate.model_validate({"payload": {"fail": False}}))
    for minute in range(3, 8):
        pipeline.clock.set(_at(minute))
        pipeline.tick()
        if pipeline.run(run_id_for(job.id, _at(minute))).status is RunStatus.QUEUED:
            _execute(pipeline, job.id, minute)
    probe = pipeline.run(run_id_for(job.id, _at(5)))  # the first occurrence from the cooldown's end
    assert probe.nominal_at == _at(5) < probe.scheduled_for
    assert probe.status is RunStatus.SUCCEEDED
    closed = _job(pipeline, job.id)
    assert (closed.state, closed.breaker, closed.consecutive_failures) == (JobState.ACTIVE, None, 0)
    assert emitted["CircuitClosed"] == 1
    assert pipeline.run(run_id_for(job.id, _at(6))).status is RunStatus.SUCCEEDED  # and it runs again


def test_a_jittered_jobs_queued_run_is_elected_probe_by_its_occurrence(pipeline):
    """A cooldown shorter than the horizon: the run claimed before the breaker opened whose occurrence is the
    first from the cooldown's end becomes the probe, named by its occurrence as the claim names one, and its
    success closes the breaker."""
    breaker = {"failure_threshold": 1, "cooldown_seconds": 30}
    job = _failing_job(pipeline, jitter_seconds=30, circuit_breaker=breaker)
    assert _execute(pipeline, job.id, 1) is RunStatus.FAILED  # opens until before 12:02 (30 s from 12:01 + offset)
    pipeline.services.jobs.update("default", job.id, JobUpdate.model_validate({"payload": {"fail": False}}))
    assert _execute(pipeline, job.id, 2) is RunStatus.SUCCEEDED  # claimed at create: elected the probe
    closed = _job(pipeline, job.id)
    assert (closed.state, closed.breaker) == (JobState.ACTIVE, None)


def test_breaker_an_elected_probe_an_overlap_skips_settles_as_the_probe(pipeline):
    """The probe elected by the executor, then refused by a later gate (the job's running slot is taken): it is
    recorded as the probe it now is, so the breaker reopens and a claim names the next probe; recorded as the run
    held back it was, the job would keep a probe that never settles, SUSPENDED for ever."""
    job = _failing_job(pipeline, overlap="SKIP", circuit_breaker={"failure_threshold": 1, "cooldown_seconds": 60})
    _execute(pipeline, job.id, 1)  # opens until 12:02
    assert pipeline.services.store.slots.take_running_slot(job.id, run_id="another", until=_at(10), now=_at(1))
    assert _execute(pipeline, job.id, 2) is RunStatus.SKIPPED
    assert _record(pipeline, job.id, 2) == (RunStatus.SKIPPED, SkipReason.OVERLAP)
    reopened = _job(pipeline, job.id)
    assert reopened.state is JobState.SUSPENDED
    assert reopened.breaker is not None
    assert reopened.breaker.probe_at is None
    assert (reopened.breaker.cooldown_seconds, reopened.breaker.opens_until) == (60, _at(3))  # skipped: kept
