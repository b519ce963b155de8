"""Compensation (saga) through the real pipeline against moto: a workflow run that fails compensates its succeeded
steps, each compensation an ordinary run (lease, retries, DLQ, result, once), in reverse order of finish or in
parallel; a compensation that fails halts the chain or is skipped over; a crash before the compensations start is
recovered by the tick, once; racing ends start each compensation once. Time is the fake clock's; nothing sleeps."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from tickwork.faults import CrashPoint
from tickwork.model.errors import Conflict
from tickwork.model.ids import compensation_run_id_for, step_run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus

from tests.faults.crashes import ProcessKilled
from tests.harness import TENANT, Pipeline
from tests.testing_jobtypes import EXECUTIONS
from tests.workflow_runs import (  # noqa: F401  fresh_hold: autouse
    FAILING,
    HOLD,
    ONCE,
    create,
    deliver_round,
    fresh_hold,
    occur,
    result_of,
    statuses,
    step,
    view,
)


def undo(sid: str, **fields: Any) -> dict[str, Any]:
    """A compensation that records what it cancels: the step's own booking, from its result."""
    return {"type": "counting", "payload": {"cancel": {"$from": f"steps.{sid}.result.booking"}}, **fields}


def trip(*, parallel: bool = False, **compensation: Any) -> list[dict[str, Any]]:
    """Book a trip: reserve the flight, then the hotel (in parallel with it, `parallel`), then charge the card,
    which fails."""
    hotel_after = () if parallel else ("flight",)
    return [
        step("flight", payload={"booking": "F-1"}, compensate=undo("flight")),
        step("hotel", *hotel_after, payload={"booking": "H-2"}, compensate=undo("hotel")),
        step("charge", "flight", "hotel", **FAILING),
    ]


def queued_run_ids(pipeline: Pipeline) -> list[str]:
    """The run ids waiting on the queues (received, and made visible again at once)."""
    ids = []
    for band in Band:
        messages = pipeline.receive(band)
        for message in messages:
            pipeline.sqs.change_message_visibility(
                QueueUrl=pipeline.resources.queue_urls[band.value],
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=0,
            )
        ids += [json.loads(m["Body"])["run_id"] for m in messages]
    return sorted(ids)


def comp(workflow_run_id: str, sid: str) -> str:
    return compensation_run_id_for(workflow_run_id, sid)


def compensation_statuses(pipeline: Pipeline, workflow_run_id: str) -> dict[str, str]:
    run = view(pipeline, workflow_run_id)
    return {
        sid: f"{c.status}:{c.skip_reason.value}" if c.skip_reason else str(c.status)
        for sid, c in run.compensations.items()
    }


# ---------------------------------------------------------------- reverse and parallel


def test_a_failed_trip_compensates_its_reservations_in_reverse_order_of_finish(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, trip()))
    assert deliver_round(pipeline) == 1  # flight
    assert deliver_round(pipeline) == 1  # hotel
    assert deliver_round(pipeline) == 1  # charge fails: the run compensates, the hotel (finished last) first
    run = view(pipeline, workflow_run_id)
    assert (run.status, run.compensating_for) == (WorkflowRunStatus.COMPENSATING, WorkflowRunStatus.FAILED)
    assert list(run.compensations) == ["hotel", "flight"]
    assert compensation_statuses(pipeline, workflow_run_id) == {"hotel": "QUEUED", "flight": "PENDING"}
    assert queued_run_ids(pipeline) == [comp(workflow_run_id, "hotel")]

    assert deliver_round(pipeline) == 1  # the hotel's compensation; then the flight's starts
    assert queued_run_ids(pipeline) == [comp(workflow_run_id, "flight")]
    assert deliver_round(pipeline) == 1
    assert deliver_round(pipeline) == 0

    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATED
    assert run.finished_at == pipeline.clock.now()
    assert statuses(run) == {"flight": "SUCCEEDED", "hotel": "SUCCEEDED", "charge": "FAILED"}
    assert compensation_statuses(pipeline, workflow_run_id) == {"hotel": "SUCCEEDED", "flight": "SUCCEEDED"}
    # Each an ordinary run, run once, its payload filled from its own step's result.
    for sid, booking in (("hotel", "H-2"), ("flight", "F-1")):
        run_id = comp(workflow_run_id, sid)
        assert EXECUTIONS[run_id] == 1
        compensation = pipeline.services.queries.get_run(TENANT, run_id)
        assert (compensation.status, compensation.payload, compensation.step_id) == (
            RunStatus.SUCCEEDED,
            {"cancel": booking},
            sid,
        )
        assert result_of(pipeline, run_id) == {"run_id": run_id, "cancel": booking}
    assert pipeline.count_items(kind="RUN") == 5  # three steps, two compensations
    # Not FAILED: the run cannot be retried (its compensations undid what it did).
    with pytest.raises(Conflict, match="only a FAILED workflow run can be retried"):
        pipeline.services.workflows.retry_run(TENANT, workflow_run_id)


def test_parallel_compensation_starts_every_compensation_at_once(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, trip(parallel=True), compensation={"order": "parallel"}))
    assert deliver_round(pipeline) == 2  # flight and hotel
    assert deliver_round(pipeline) == 1  # charge fails
    assert queued_run_ids(pipeline) == sorted([comp(workflow_run_id, "flight"), comp(workflow_run_id, "hotel")])
    assert deliver_round(pipeline) == 2
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.COMPENSATED
    assert EXECUTIONS[comp(workflow_run_id, "flight")] == EXECUTIONS[comp(workflow_run_id, "hotel")] == 1


def test_a_failed_run_with_nothing_to_compensate_fails_as_before(pipeline):
    steps = [step("flight"), step("charge", "flight", **FAILING)]
    workflow_run_id = occur(pipeline, create(pipeline, steps))
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert (run.status, run.compensations) == (WorkflowRunStatus.FAILED, {})


def test_an_irreversible_step_keeps_its_upstream_steps_effects(pipeline):
    steps = [
        step("flight", payload={"booking": "F-1"}, compensate=undo("flight")),
        step("ticket", "flight", irreversible=True),
        step("hotel", "ticket", payload={"booking": "H-2"}, compensate=undo("hotel")),
        step("charge", "hotel", **FAILING),
    ]
    workflow_run_id = occur(pipeline, create(pipeline, steps))
    pipeline.drain()
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.COMPENSATED
    assert compensation_statuses(pipeline, workflow_run_id) == {"hotel": "SUCCEEDED"}
    assert pipeline.existing_runs([comp(workflow_run_id, "flight")]) == set()


# ---------------------------------------------------------------- a compensation that fails


def failing_hotel_undo(**compensation: Any) -> list[dict[str, Any]]:
    steps = trip()
    steps[1]["compensate"] = {"type": "echo", "payload": {"fail_attempts": 9}, "retry": {"max_attempts": 2}}
    return steps


def test_a_compensation_that_fails_halts_the_chain_by_default(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, failing_hotel_undo()))
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATION_FAILED
    assert compensation_statuses(pipeline, workflow_run_id) == {
        "hotel": "FAILED",
        "flight": "SKIPPED:compensation_halted",
    }
    hotel_undo = pipeline.run(comp(workflow_run_id, "hotel"))
    assert (hotel_undo.attempts, hotel_undo.max_attempts) == (2, 2)  # its own retry policy
    failed = sorted(r.id for r in pipeline.services.queries.list_dlq(TENANT).items)
    assert failed == sorted([step_run_id_for(workflow_run_id, "charge"), comp(workflow_run_id, "hotel")])
    assert pipeline.dlq_messages(Band.NORMAL) == []  # acknowledged: the SQS DLQ is for what could not be processed
    assert pipeline.existing_runs([comp(workflow_run_id, "flight")]) == set()


def test_a_failed_compensations_run_is_not_retried_and_the_refusal_does_not_point_at_the_workflow_run(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, failing_hotel_undo()))
    pipeline.drain()
    hotel_undo = comp(workflow_run_id, "hotel")
    with pytest.raises(Conflict, match="a compensation's run is not retried") as refused:
        pipeline.services.redrive.retry_run(TENANT, hotel_undo)
    assert "retry " + workflow_run_id not in str(refused.value)  # that workflow run cannot be retried either
    report = pipeline.services.redrive.redrive(TENANT)
    assert hotel_undo in report.not_redriven
    assert pipeline.run(hotel_undo).status is RunStatus.FAILED


def test_a_compensation_that_fails_is_recorded_and_the_chain_continues(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, failing_hotel_undo(), compensation={"on_error": "continue"}))
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATION_FAILED  # not every effect was undone
    assert compensation_statuses(pipeline, workflow_run_id) == {"hotel": "FAILED", "flight": "SUCCEEDED"}
    assert EXECUTIONS[comp(workflow_run_id, "flight")] == 1


def test_a_compensation_whose_payload_cannot_be_made_fails_unrun_and_the_chain_goes_on_to_its_end(pipeline):
    steps = trip()
    # length(null): valid JMESPath that cannot be evaluated over the hotel's result.
    steps[1]["compensate"] = {"type": "counting", "payload": {"n": {"$from": "length(steps.hotel.result.count)"}}}
    workflow_run_id = occur(pipeline, create(pipeline, steps, compensation={"on_error": "continue"}))
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATION_FAILED
    assert compensation_statuses(pipeline, workflow_run_id) == {"hotel": "FAILED", "flight": "SUCCEEDED"}
    unmade = pipeline.run(comp(workflow_run_id, "hotel"))
    assert (unmade.attempts, unmade.error.type if unmade.error else None) == (0, "StepExpressionError")
    assert EXECUTIONS[comp(workflow_run_id, "hotel")] == 0


# ---------------------------------------------------------------- crashes and races


@pytest.mark.parametrize(
    ("point", "skip"),
    [
        (CrashPoint.WORKFLOW_BEFORE_STEP_SETTLED, 0),  # charge's run FAILED; its workflow run not told
        (CrashPoint.WORKFLOW_AFTER_STEP_SETTLED, 0),  # charge's failure recorded; nothing decided
        (CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT, 0),  # about to record COMPENSATING
        (CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT, 1),  # COMPENSATING; the hotel's compensation's run made
    ],
    ids=["before-settled", "after-settled", "before-compensating", "after-compensation-run-put"],
)
def test_a_crash_between_a_steps_failure_and_its_compensations_start_is_recovered_once(pipeline, point, skip):
    workflow_run_id = occur(pipeline, create(pipeline, trip()))
    deliver_round(pipeline)  # flight
    deliver_round(pipeline)  # hotel
    pipeline.crashes.arm(point, skip=skip)
    with pytest.raises(ProcessKilled):
        deliver_round(pipeline)  # charge fails, and its executor dies
    pipeline.crashes.disarm()
    assert pipeline.run(step_run_id_for(workflow_run_id, "charge")).status is RunStatus.FAILED

    pipeline.clock.advance(150)  # past the reconciliation's wait: the tick finds the run stalled
    pipeline.tick()
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATED
    assert EXECUTIONS[comp(workflow_run_id, "hotel")] == EXECUTIONS[comp(workflow_run_id, "flight")] == 1
    assert pipeline.count_items(kind="RUN") == 5


def test_racing_ends_of_the_last_step_and_the_compensations_start_and_record_each_once(pipeline, monkeypatch):
    """Parallel branches: the charge fails beside the hotel. The hotel's end (the last step's) and a duplicate
    report of the charge's failure are recorded at the same instant on two threads; then the two compensations
    end on two threads of one batch."""
    steps = trip(parallel=True)
    steps[2]["depends_on"] = ["flight"]  # charge runs beside the hotel
    workflow_run_id = occur(pipeline, create(pipeline, steps, compensation={"order": "parallel"}))
    progress = pipeline.services.workflow_progress
    held: list[Any] = []
    original = progress.step_settled

    def hold_hotel(run: Any, *args: Any) -> Any:
        if run.step_id == "hotel" and not run.is_compensation:
            held.append((run, *args))
            return None
        return original(run, *args)

    monkeypatch.setattr(progress, "step_settled", hold_hotel)
    assert deliver_round(pipeline) == 2  # flight (the charge starts) and hotel (its end held back)
    assert deliver_round(pipeline) == 1  # charge fails; the hotel's step has not ended as far as the run knows
    monkeypatch.undo()
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.RUNNING

    charge = pipeline.run(step_run_id_for(workflow_run_id, "charge"))
    calls = [held[0], (charge, RunStatus.FAILED)]
    barrier = threading.Barrier(len(calls))
    reports: list[Any] = []

    def settle(args: tuple[Any, ...]) -> None:
        barrier.wait()
        reports.append(progress.step_settled(*args))

    threads = [threading.Thread(target=settle, args=(args,)) for args in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sent = sorted(run_id for report in reports for run_id in report.sent)
    assert sent == sorted([comp(workflow_run_id, "flight"), comp(workflow_run_id, "hotel")])  # each once
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.COMPENSATING

    assert deliver_round(pipeline) == 2  # the two compensations, one batch, two threads
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATED
    assert EXECUTIONS[comp(workflow_run_id, "hotel")] == EXECUTIONS[comp(workflow_run_id, "flight")] == 1
    assert pipeline.count_items(kind="RUN") == 5
    assert sum(pipeline.queued_messages(b) for b in Band) == 0


# ---------------------------------------------------------------- cancel asking for compensation


def test_cancel_with_compensate_waits_for_the_running_step_then_compensates_what_succeeded(pipeline):
    steps = [
        step("flight", payload={"booking": "F-1"}, compensate=undo("flight")),
        step("hotel", "flight", type="hold", payload={"finish": True, "booking": "H-2"}, compensate=undo("hotel")),
        step("charge", "hotel"),
    ]
    workflow_run_id = occur(pipeline, create(pipeline, steps))
    deliver_round(pipeline)  # flight
    (message,) = pipeline.receive(Band.NORMAL)
    executor = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [message]))
    executor.start()
    assert HOLD.started.wait(10)

    cancelled = pipeline.services.workflows.cancel_run(TENANT, workflow_run_id, compensate=True)
    assert (cancelled.status, cancelled.compensating_for) == (
        WorkflowRunStatus.COMPENSATING,
        WorkflowRunStatus.CANCELLED,
    )
    assert statuses(cancelled)["charge"] == "SKIPPED:cancelled"
    assert queued_run_ids(pipeline) == []  # nothing compensated while the hotel's step runs

    HOLD.release.set()
    executor.join(10)  # it returns anyway: SUCCEEDED, so it is compensated too, first
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.COMPENSATED
    assert list(run.compensations) == ["hotel", "flight"]
    assert EXECUTIONS[comp(workflow_run_id, "flight")] == EXECUTIONS[comp(workflow_run_id, "hotel")] == 1


def test_cancel_with_compensate_and_nothing_to_compensate_is_cancelled(pipeline):
    steps = [step("flight"), step("charge", "flight", **{"retry": ONCE})]
    workflow_run_id = occur(pipeline, create(pipeline, steps))
    deliver_round(pipeline)  # flight: no compensate
    cancelled = pipeline.services.workflows.cancel_run(TENANT, workflow_run_id, compensate=True)
    # charge's run is QUEUED, not started: its executor records it SKIPPED, and then the run is CANCELLED.
    assert cancelled.status is WorkflowRunStatus.COMPENSATING
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert (run.status, run.compensations) == (WorkflowRunStatus.CANCELLED, {})
    assert statuses(run)["charge"] == "SKIPPED:cancelled"
