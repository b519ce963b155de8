"""Overlap policies (docs/policies.md, "Overlap") against moto: a job firing every second whose runs take 3.5 s,
under ALLOW, SKIP, BUFFER_ONE and CANCEL_OTHER, on the fake clock; crashed holders; what ALLOW costs.

The runs are delivered to the executor as SQS would (one message an invocation, each at its scheduled time, a
deferred one again at its `not_before`), each invocation in its own thread, as concurrent Lambdas. The test
moves the clock half a second at a time and waits until every handler has seen the new time before it delivers
anything, so the runs interleave as the clock says (see tests.testing_jobtypes.OverlapProbe)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from unittest.mock import patch

import pytest
from tickwork.executor.delivery import Delivery, Outcome
from tickwork.model.job import Job
from tickwork.model.messages import RunMessage
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.model.states import DeferReason, RunStatus, SkipReason
from tickwork.observability import metrics
from tickwork.store.running_slots import RunningSlots

from tests.harness import START, Pipeline
from tests.testing_jobtypes import PROBE

STARTS = START + timedelta(minutes=2)
OCCURRENCES = 10  # the runs the test delivers: one a second from STARTS
RUN_SECONDS = 3.5
STEP = timedelta(milliseconds=500)

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@dataclass
class Invocation:
    run_id: str
    thread: threading.Thread
    outcome: list[Outcome] = field(default_factory=list)


class ConcurrentDeliveries:
    """The executor invoked once per message, concurrently, on the pipeline's fake clock."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.live: list[Invocation] = []
        self.waiting: dict[str, datetime] = {}  # deferred run -> when its message comes back
        self.deliveries = 0
        self.errors: list[Exception] = []

    def deliver(self, run_id: str) -> None:
        run = self.pipeline.run(run_id)
        body = RunMessage(run_id=run.id, job_id=run.job_id, tenant=run.tenant, scheduled_for=run.scheduled_for)
        self.deliveries += 1
        delivery = Delivery(
            body=body.model_dump_json(),
            message_id=f"m{self.deliveries}",
            receipt_handle=f"gone-{self.deliveries}",  # SQS is not in the loop: visibility changes find nothing
            queue_url=self.pipeline.resources.queue_urls[Band.NORMAL.value],
            band=Band.NORMAL,
        )
        invocation = Invocation(run_id, threading.Thread(target=lambda: None))

        def invoke() -> None:
            try:
                invocation.outcome.append(self.pipeline.services.executor.execute(delivery, lambda: 900_000))
            except Exception as exc:  # seen by the test, not lost in a thread
                self.errors.append(exc)

        invocation.thread = threading.Thread(target=invoke, daemon=True)
        invocation.thread.start()
        self.live.append(invocation)
        self.settle()

    def settle(self) -> None:
        """Until every invocation has ended or its handler has seen the clock's time; deferred runs noted."""
        assert not self.errors, self.errors
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            now = self.pipeline.clock.now()
            self.live = [i for i in self.live if i.thread.is_alive() or self._ended(i)]
            if all(PROBE.seen.get(i.run_id) == now for i in self.live):
                return
            time.sleep(0.002)
        raise AssertionError("invocations did not settle")

    def _ended(self, invocation: Invocation) -> bool:
        if invocation.outcome == [Outcome.BUSY]:
            run = self.pipeline.run(invocation.run_id)
            assert run.not_before is not None
            self.waiting[invocation.run_id] = run.not_before
        return False

    def move_to(self, instant: datetime) -> None:
        self.pipeline.clock.set(instant)
        self.settle()
        due = sorted(run_id for run_id, at in self.waiting.items() if at <= instant)
        for run_id in due:  # older runs first, as their messages came back first
            del self.waiting[run_id]
            self.deliver(run_id)

    @property
    def idle(self) -> bool:
        return not self.live and not self.waiting


def _run_every_second(pipeline: Pipeline, overlap: str) -> tuple[Job, list[Run], Counter[str]]:
    """The job fires every second; each run takes RUN_SECONDS. Returns the job, its first OCCURRENCES runs as
    they ended, and the metrics emitted."""
    PROBE.reset()
    metrics.clear_metrics()
    job = pipeline.create_job(
        schedule={"rate": "1 second", "start_at": STARTS},
        type="overlap_probe",
        payload={"hold_seconds": RUN_SECONDS},
        overlap=overlap,
    )
    pipeline.clock.set(STARTS)
    pipeline.tick()  # claims the coming occurrences (their SQS messages are not used: see ConcurrentDeliveries)
    occurrences = {
        STARTS + timedelta(seconds=i): f"{job.id}.{int((STARTS.timestamp() + i) * 1000):013d}"
        for i in range(OCCURRENCES)
    }
    deliveries = ConcurrentDeliveries(pipeline)
    emitted: Counter[str] = Counter()
    instant = STARTS
    while instant < STARTS + timedelta(seconds=60):
        deliveries.move_to(instant)
        if instant in occurrences:
            deliveries.deliver(occurrences[instant])
        if instant >= STARTS + timedelta(seconds=OCCURRENCES) and deliveries.idle:
            break
        instant += STEP
    assert deliveries.idle, "runs still waiting or running after a minute"
    for name, values in metrics.metric_set.items():
        emitted[name] = sum(int(v) for v in values["Value"])
    metrics.clear_metrics()
    runs = pipeline.services.store.runs.get_runs(list(occurrences.values()))
    return job, [runs[run_id] for run_id in occurrences.values()], emitted


def _statuses(runs: list[Run]) -> Counter[str]:
    return Counter(r.status.value if r.skip_reason is None else f"{r.status.value}:{r.skip_reason.value}" for r in runs)


def test_allow_lets_runs_overlap(pipeline):
    _, runs, emitted = _run_every_second(pipeline, "ALLOW")
    assert _statuses(runs) == {"SUCCEEDED": 10}
    assert PROBE.most_at_once() == 4  # 3.5 s runs, one a second
    assert emitted["RunsSkipped"] == 0
    assert all(r.deferred == 0 for r in runs)


def test_skip_runs_one_at_a_time_and_skips_the_rest(pipeline):
    _, runs, emitted = _run_every_second(pipeline, "SKIP")
    assert PROBE.most_at_once() == 1
    # 0 runs 0-3.5 s, 4 runs 4-7.5 s, 8 runs 8-11.5 s; the others found one running.
    assert [r.status for r in runs].count(RunStatus.SUCCEEDED) == 3
    assert [runs.index(r) for r in runs if r.status is RunStatus.SUCCEEDED] == [0, 4, 8]
    assert _statuses(runs) == {"SUCCEEDED": 3, "SKIPPED:overlap": 7}
    assert emitted["RunsSkipped"] == 7


def test_buffer_one_lets_one_run_wait_and_skips_the_others(pipeline):
    _, runs, emitted = _run_every_second(pipeline, "BUFFER_ONE")
    assert PROBE.most_at_once() == 1
    # 0 runs 0-3.5 s while 1 waits (2 and 3 skipped); 1 starts at 4 s, the first look after 0 ended, while 4 waits;
    # 4 runs 8-11.5 s while 8 waits; 8 runs 12-15.5 s.
    assert [i for i, r in enumerate(runs) if r.status is RunStatus.SUCCEEDED] == [0, 1, 4, 8]
    assert _statuses(runs) == {"SUCCEEDED": 4, "SKIPPED:overlap": 6}
    buffered = [i for i, r in enumerate(runs) if r.deferred_reason is DeferReason.OVERLAP_BUFFER]
    assert buffered == [1, 4, 8]
    assert emitted["RunsBuffered"] == 3
    assert emitted["RunsSkipped"] == 6
    # The wait consumed no attempt, and its lateness is that of its real start.
    waited = runs[1]
    assert waited.attempts == 1
    assert waited.deferred == 3  # looked at 1, 2 and 3 s
    assert waited.lateness_ms == 3000
    assert PROBE.intervals[waited.id][0] == STARTS + timedelta(seconds=4)


def test_cancel_other_stops_the_running_run_then_starts_the_new_one(pipeline):
    _, runs, emitted = _run_every_second(pipeline, "CANCEL_OTHER")
    assert PROBE.most_at_once() == 1
    # Each run is asked to stop by the next; only the last runs to its end.
    assert _statuses(runs) == {"SKIPPED:cancelled": 9, "SUCCEEDED": 1}
    assert runs[-1].status is RunStatus.SUCCEEDED
    assert emitted["RunsCancelledByOverlap"] == 9
    assert all(r.deferred_reason is DeferReason.OVERLAP_CANCEL for r in runs[1:])
    # The first was cancelled at its first look after run 1 asked (1 s), and run 1 started as it stopped.
    first, second = PROBE.intervals[runs[0].id], PROBE.intervals[runs[1].id]
    assert first == [STARTS, STARTS + timedelta(seconds=2)]
    assert second[0] == STARTS + timedelta(seconds=2)
    assert runs[1].attempts == 1


# ---------------------------------------------------------------- a crashed holder


def _crashed_holder(pipeline: Pipeline, overlap: str) -> tuple[Job, Run, datetime]:
    """A run that took its job's running slot under a 60 s lease, then its executor died."""
    job = pipeline.create_job(schedule={"at": START + timedelta(days=1)}, overlap=overlap)
    holder = pipeline.services.jobs.trigger("default", job.id)
    now = pipeline.clock.now()
    lease = pipeline.services.store.leases.lease_run(holder.id, owner="dead", now=now, lease_for=timedelta(seconds=60))
    assert lease.lease_until is not None
    claim = pipeline.services.store.slots.claim_running_slot(
        job.id, run_id=holder.id, until=lease.lease_until, now=now, respect_buffer=False
    )
    assert claim.taken
    return job, holder, lease.lease_until


@pytest.mark.parametrize(
    ("overlap", "reason"), [("BUFFER_ONE", DeferReason.OVERLAP_BUFFER), ("CANCEL_OTHER", DeferReason.OVERLAP_CANCEL)]
)
def test_a_crashed_holders_slot_frees_when_its_lease_ends(pipeline, overlap, reason):
    PROBE.reset()
    job, holder, lease_ends = _crashed_holder(pipeline, overlap)
    pipeline.clock.advance(1)
    waiter = pipeline.services.jobs.trigger("default", job.id)
    deliveries = ConcurrentDeliveries(pipeline)
    deliveries.deliver(waiter.id)
    assert pipeline.run(waiter.id).status is RunStatus.QUEUED
    assert pipeline.run(waiter.id).deferred_reason is reason
    # It looks again every second while the dead holder's lease lasts, then takes the slot.
    instant = pipeline.clock.now()
    while not deliveries.idle:
        instant += STEP
        deliveries.move_to(instant)
    ran = pipeline.run(waiter.id)
    assert ran.status is RunStatus.SUCCEEDED
    assert ran.attempts == 1
    assert lease_ends < ran.started_at <= lease_ends + timedelta(seconds=1)
    if overlap == "CANCEL_OTHER":
        assert pipeline.services.store.leases.cancel_requested(holder.id)  # it was asked; it never answered


def test_a_run_skipped_overlap_has_no_start_only_the_time_of_its_skip(pipeline):
    job, holder, _ = _crashed_holder(pipeline, "SKIP")
    pipeline.receive(Band.NORMAL)  # the holder's own message: it is "running" elsewhere
    pipeline.clock.advance(1)
    skipped = pipeline.services.jobs.trigger("default", job.id)
    pipeline.clock.advance(2)
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
    run = pipeline.run(skipped.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.OVERLAP)
    assert (run.started_at, run.lateness_ms, run.duration_ms, run.attempt_history) == (None, None, None, [])
    assert run.finished_at == pipeline.clock.now()
    assert pipeline.run(holder.id).started_at is not None  # the holder did start


def test_a_buffered_run_that_never_comes_back_frees_the_wait_slot(pipeline):
    job, _, _ = _crashed_holder(pipeline, "BUFFER_ONE")
    store = pipeline.services.store
    now = pipeline.clock.now()
    assert store.slots.take_buffer_slot(job.id, run_id="lost", until=now + timedelta(seconds=31), now=now)
    assert not store.slots.take_buffer_slot(job.id, run_id="other", until=now + timedelta(seconds=31), now=now)
    later = now + timedelta(seconds=32)
    assert store.slots.take_buffer_slot(job.id, run_id="other", until=later + timedelta(seconds=31), now=later)


def _running_elsewhere(pipeline: Pipeline, job: Job, run: Run) -> None:
    """`run` leased by another executor for 60 s, holding its job's running slot."""
    now = pipeline.clock.now()
    lease = pipeline.services.store.leases.lease_run(run.id, owner="busy", now=now, lease_for=timedelta(seconds=60))
    assert lease.lease_until is not None
    assert pipeline.services.store.slots.claim_running_slot(
        job.id, run_id=run.id, until=lease.lease_until, now=now, respect_buffer=False
    ).taken


def test_cancel_other_skips_a_waiter_older_than_the_running_run(pipeline):
    PROBE.reset()
    job = pipeline.create_job(schedule={"at": START + timedelta(days=1)}, overlap="CANCEL_OTHER")
    older = pipeline.services.jobs.trigger("default", job.id)
    pipeline.clock.advance(1)
    newer = pipeline.services.jobs.trigger("default", job.id)
    _running_elsewhere(pipeline, job, newer)
    # The older run (a waiter that lost the freed slot to a newer one) does not stop the newer run: it is skipped.
    ConcurrentDeliveries(pipeline).deliver(older.id)
    skipped = pipeline.run(older.id)
    assert (skipped.status, skipped.skip_reason) == (RunStatus.SKIPPED, SkipReason.OVERLAP)
    assert not pipeline.services.store.leases.cancel_requested(newer.id)
    assert pipeline.run(newer.id).status is RunStatus.RUNNING


# ---------------------------------------------------------------- cost


# Measured on the code before the overlap policies: ChangeMessageVisibility to the lease, the lease (UpdateItem),
# the job's read (GetItem), the result (PutObject), the outcome (UpdateItem), the harness's DeleteMessageBatch.
ALLOW_RUN_CALLS = {"ChangeMessageVisibility": 1, "UpdateItem": 2, "GetItem": 1, "PutObject": 1, "DeleteMessageBatch": 1}


def test_an_allow_run_costs_what_it_did_before_overlap_policies(pipeline):
    job = pipeline.create_job(schedule={"at": START + timedelta(days=1)})
    run = pipeline.services.jobs.trigger("default", job.id)
    messages = pipeline.receive(Band.NORMAL)
    pipeline.calls.clear()
    pipeline.deliver(Band.NORMAL, messages)
    assert dict(pipeline.calls.by_operation()) == ALLOW_RUN_CALLS
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED


@pytest.mark.parametrize("overlap", ["SKIP", "BUFFER_ONE", "CANCEL_OTHER"])
def test_a_run_that_finds_the_slot_free_pays_two_writes_for_it(pipeline, overlap):
    job = pipeline.create_job(schedule={"at": START + timedelta(days=1)}, overlap=overlap)
    run = pipeline.services.jobs.trigger("default", job.id)
    messages = pipeline.receive(Band.NORMAL)
    pipeline.calls.clear()
    pipeline.deliver(Band.NORMAL, messages)
    # Taking the running slot and giving it back: two UpdateItems on the job, whatever the policy.
    assert dict(pipeline.calls.by_operation()) == {**ALLOW_RUN_CALLS, "UpdateItem": ALLOW_RUN_CALLS["UpdateItem"] + 2}
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED
    item = pipeline.services.store.shared_table.client.get_item(
        TableName=pipeline.services.settings.table_name, Key={"pk": {"S": f"JOB#{job.id}"}, "sk": {"S": "JOB"}}
    )["Item"]
    assert not {"running_run", "buffered_run"} & set(item)  # nothing left held


def test_of_two_runs_finding_the_slot_taken_together_exactly_one_waits(pipeline):
    job, holder, _ = _crashed_holder(pipeline, "BUFFER_ONE")
    pipeline.receive(Band.NORMAL)  # the holder's own message: it is "running" elsewhere
    pipeline.clock.advance(1)
    a = pipeline.services.jobs.trigger("default", job.id)
    b = pipeline.services.jobs.trigger("default", job.id)
    messages = [m for m in pipeline.receive(Band.NORMAL) if json.loads(m["Body"])["run_id"] in (a.id, b.id)]
    assert len(messages) == 2
    # Both have found the running slot taken before either asks for the wait slot: the race it must survive.
    slots = pipeline.services.store.slots
    both_refused = threading.Barrier(2, timeout=10)

    def take_once_both_were_refused(job_id: str, **kwargs: Any) -> bool:
        both_refused.wait()
        return RunningSlots.take_buffer_slot(slots, job_id, **kwargs)

    with patch.object(slots, "take_buffer_slot", take_once_both_were_refused):
        pipeline.deliver(Band.NORMAL, messages)
    outcomes = sorted(
        (r.status.value, r.skip_reason.value if r.skip_reason else r.deferred_reason.value if r.deferred_reason else "")
        for r in (pipeline.run(a.id), pipeline.run(b.id))
    )
    assert outcomes == [("QUEUED", "overlap_buffer"), ("SKIPPED", "overlap")]
    assert pipeline.run(holder.id).status is RunStatus.RUNNING


def test_a_run_whose_payload_no_longer_parses_gives_the_slot_back(pipeline):
    job = pipeline.create_job(schedule={"at": START + timedelta(days=1)}, overlap="BUFFER_ONE")
    store = pipeline.services.store
    stored = store.jobs.get_job(job.id)
    assert stored is not None
    # A payload its type now refuses (written past the API's validation, as an older version may have left it).
    broken = stored.model_copy(update={"payload": {"fail_attempts": -1}, "version": stored.version + 1})
    assert store.jobs.replace_job(broken, expected_version=stored.version)
    run = pipeline.services.jobs.trigger("default", job.id)
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
    assert pipeline.run(run.id).status is RunStatus.FAILED
    item = store.shared_table.client.get_item(
        TableName=pipeline.services.settings.table_name, Key={"pk": {"S": f"JOB#{job.id}"}, "sk": {"S": "JOB"}}
    )["Item"]
    assert "running_run" not in item


# ---------------------------------------------------------------- a run that has run before


@pytest.mark.parametrize("overlap", ["SKIP", "BUFFER_ONE", "CANCEL_OTHER"])
def test_a_failed_run_retried_while_a_newer_run_holds_the_slot_waits_for_it_and_is_never_skipped(pipeline, overlap):
    """A run that has run (its handler executed) is never skipped later for its own overlap: it runs on. Retried
    after it FAILED, while a newer run holds the job's slot, it waits for the slot; it was SKIPPED `overlap` (found
    by tests/simulation: started_runs_run_on)."""
    PROBE.reset()
    job = pipeline.create_job(
        schedule={"at": START + timedelta(days=1)},
        overlap=overlap,
        payload={"fail_attempts": 1},
        retry={"max_attempts": 1},
    )
    failed = pipeline.services.jobs.trigger("default", job.id)
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
    assert pipeline.run(failed.id).status is RunStatus.FAILED
    pipeline.clock.advance(1)
    newer = pipeline.services.jobs.trigger("default", job.id)
    pipeline.receive(Band.NORMAL)  # the newer run's own message: it is running elsewhere
    _running_elsewhere(pipeline, job, newer)
    now = pipeline.clock.now()
    if overlap == "BUFFER_ONE":  # the wait slot taken too: a fresh run would be skipped
        assert pipeline.services.store.slots.take_buffer_slot(
            job.id, run_id="another", until=now + timedelta(seconds=31), now=now
        )

    pipeline.services.redrive.retry_run("default", failed.id, by=None)
    ConcurrentDeliveries(pipeline).deliver(failed.id)

    waiting = pipeline.run(failed.id)
    assert (waiting.status, waiting.skip_reason) == (RunStatus.QUEUED, None)
    assert waiting.deferred_reason in (DeferReason.OVERLAP_BUFFER, DeferReason.OVERLAP_CANCEL)
    assert not pipeline.services.store.leases.cancel_requested(newer.id)  # it waits its turn: the newer runs on
