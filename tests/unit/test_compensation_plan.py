"""Compensation (saga), the pure part: which steps are compensated, in which order, what starts next and how the
run ends (tickwork.model.workflow.compensation), a compensation's payload, and the definition's checks of it. No
AWS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tickwork.control.workflow_factory import WorkflowFactory
from tickwork.model.errors import InvalidInput
from tickwork.model.ids import compensation_run_id_for, parse_run_id, step_run_id_for
from tickwork.model.states import SkipReason
from tickwork.model.workflow.advance import (
    EXPRESSION_FAILED,
    StepState,
    StepStatus,
    WorkflowRunStatus,
    compensated_steps,
    compensation_start,
    plan_advance,
)
from tickwork.model.workflow.compensation import compensation_order, plan_compensation
from tickwork.model.workflow.definition import CompensationPolicy, Dag, WorkflowStep, check_steps
from tickwork.store.codec import run_key

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
OK = StepState(StepStatus.SUCCEEDED)
FAILED = StepState(StepStatus.FAILED)
QUEUED = StepState(StepStatus.QUEUED)
SKIPPED_FAILED = StepState(StepStatus.SKIPPED, SkipReason.UPSTREAM_FAILED)
UNDO = {"type": "echo", "payload": {"undo": True}}
REVERSE = CompensationPolicy()
PARALLEL = CompensationPolicy(order="parallel")
CONTINUE = CompensationPolicy(on_error="continue")


def dag(*specs: dict[str, Any]) -> Dag:
    return Dag([WorkflowStep.model_validate({"type": "echo", **spec}) for spec in specs])


def s(sid: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "depends_on": list(depends_on), **fields}


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


# The book-trip saga: flight and hotel in parallel, then the charge, which fails.
TRIP = dag(
    s("flight", compensate=UNDO),
    s("hotel", compensate=UNDO),
    s("charge", "flight", "hotel", compensate=UNDO),
)
TRIP_FAILED = {"flight": OK, "hotel": OK, "charge": FAILED}
HOTEL_LAST = {"flight": at(1), "hotel": at(2), "charge": at(3)}


# ---------------------------------------------------------------- which steps, in which order


def test_a_failed_run_with_steps_to_compensate_is_compensating_not_failed():
    plan = plan_advance(TRIP, TRIP_FAILED, {}, max_payload_bytes=1000)
    assert plan.status is WorkflowRunStatus.COMPENSATING


def test_a_failed_run_with_nothing_to_compensate_is_failed_as_before():
    plain = dag(s("a"), s("b", "a"))
    assert plan_advance(plain, {"a": OK, "b": FAILED}, {}, max_payload_bytes=1000).status is WorkflowRunStatus.FAILED


def test_a_succeeded_run_is_never_compensated():
    states = {"flight": OK, "hotel": OK, "charge": OK}
    assert plan_advance(TRIP, states, {}, max_payload_bytes=1000).status is WorkflowRunStatus.SUCCEEDED


def test_only_succeeded_steps_with_a_compensate_are_compensated():
    workflow = dag(s("a", compensate=UNDO), s("b"), s("c", "a", compensate=UNDO), s("d", "c", compensate=UNDO))
    states = {"a": OK, "b": OK, "c": FAILED, "d": SKIPPED_FAILED}
    assert compensated_steps(workflow, states) == ["a"]


def test_reverse_order_of_finish_not_of_definition():
    assert compensation_order(TRIP, TRIP_FAILED, HOTEL_LAST) == ["hotel", "flight"]
    flight_last = {"flight": at(5), "hotel": at(2)}
    assert compensation_order(TRIP, TRIP_FAILED, flight_last) == ["flight", "hotel"]


def test_steps_that_finished_at_the_same_instant_are_undone_later_in_dependency_order_first():
    chain = dag(s("a", compensate=UNDO), s("b", "a", compensate=UNDO), s("c", "b"))
    states = {"a": OK, "b": OK, "c": FAILED}
    assert compensation_order(chain, states, {"a": at(1), "b": at(1)}) == ["b", "a"]
    assert compensation_order(chain, states, {}) == ["b", "a"]  # no instants recorded: dependency order


def test_an_irreversible_step_that_succeeded_keeps_its_upstream_steps_effects():
    workflow = dag(
        s("reserve", compensate=UNDO),
        s("side", compensate=UNDO),
        s("ship", "reserve", irreversible=True),
        s("notify", "ship", compensate=UNDO),
        s("close", "notify", "side"),
    )
    states = {"reserve": OK, "side": OK, "ship": OK, "notify": OK, "close": FAILED}
    # reserve is upstream of the shipped step: kept. side is not, nor is notify (after it): both undone.
    assert compensated_steps(workflow, states) == ["side", "notify"]


def test_an_irreversible_step_that_did_not_succeed_keeps_nothing():
    workflow = dag(s("reserve", compensate=UNDO), s("ship", "reserve", irreversible=True))
    assert compensated_steps(workflow, {"reserve": OK, "ship": FAILED}) == ["reserve"]


def test_a_run_whose_only_compensable_steps_are_kept_by_an_irreversible_step_is_failed():
    workflow = dag(s("reserve", compensate=UNDO), s("ship", "reserve", irreversible=True), s("after", "ship"))
    states = {"reserve": OK, "ship": OK, "after": FAILED}
    assert plan_advance(workflow, states, {}, max_payload_bytes=1000).status is WorkflowRunStatus.FAILED


# ---------------------------------------------------------------- what starts next


def plan(compensations: dict[str, StepState], policy: CompensationPolicy = REVERSE, **kwargs: Any) -> Any:
    kwargs.setdefault("cause", WorkflowRunStatus.FAILED)
    states = kwargs.pop("states", TRIP_FAILED)
    return plan_compensation(TRIP, states, HOTEL_LAST, compensations, policy, **kwargs)


def test_reverse_starts_one_at_a_time_the_last_finished_first():
    assert (plan({}).start, plan({}).status) == (["hotel"], None)
    assert plan({"hotel": QUEUED}).start == []  # waits for it
    assert plan({"hotel": OK}).start == ["flight"]
    done = plan({"hotel": OK, "flight": OK})
    assert (done.start, done.status) == ([], WorkflowRunStatus.COMPENSATED)


def test_parallel_starts_every_compensation_at_once():
    assert plan({}, PARALLEL).start == ["hotel", "flight"]
    assert plan({"hotel": QUEUED, "flight": QUEUED}, PARALLEL).start == []
    assert plan({"hotel": OK, "flight": QUEUED}, PARALLEL).status is None
    assert plan({"hotel": OK, "flight": OK}, PARALLEL).status is WorkflowRunStatus.COMPENSATED


def test_parallel_ends_compensation_failed_once_all_ended_if_any_failed():
    assert plan({"hotel": FAILED, "flight": QUEUED}, PARALLEL).status is None
    assert plan({"hotel": FAILED, "flight": OK}, PARALLEL).status is WorkflowRunStatus.COMPENSATION_FAILED


def test_halt_skips_the_compensations_not_started_and_ends_the_run():
    halted = plan({"hotel": FAILED})
    assert (halted.start, halted.halt, halted.status) == ([], ["flight"], WorkflowRunStatus.COMPENSATION_FAILED)


def test_continue_records_the_failure_and_starts_the_next():
    going_on = plan({"hotel": FAILED}, CONTINUE)
    assert (going_on.start, going_on.halt, going_on.status) == (["flight"], [], None)
    assert plan({"hotel": FAILED, "flight": OK}, CONTINUE).status is WorkflowRunStatus.COMPENSATION_FAILED


def test_nothing_starts_while_a_step_is_still_running():
    # A run cancelled with compensate: a running step may still succeed, and then it is compensated too.
    running = plan({}, states={"flight": OK, "hotel": QUEUED, "charge": StepState(StepStatus.SKIPPED)})
    assert (running.start, running.status) == ([], None)


def test_with_nothing_to_compensate_the_run_ends_as_it_would_have():
    states = {"flight": FAILED, "hotel": FAILED, "charge": SKIPPED_FAILED}
    assert plan({}, states=states).status is WorkflowRunStatus.FAILED
    assert plan({}, states=states, cause=WorkflowRunStatus.CANCELLED).status is WorkflowRunStatus.CANCELLED


# ---------------------------------------------------------------- a compensation's payload


def test_a_compensations_payload_reads_the_steps_own_result_and_its_upstream_steps():
    workflow = dag(
        s("a"),
        s("b", "a", compensate={"type": "echo", "payload": {"id": {"$from": "steps.b.result.id"}, "a": {"$from": "steps.a.result"}}}),
    )  # fmt: skip
    start = compensation_start(workflow, "b", {"a": OK, "b": OK}, {"a": 1, "b": {"id": "B-7"}}, max_payload_bytes=1000)
    assert (start.payload, start.error) == ({"id": "B-7", "a": 1}, None)
    assert workflow.compensation_reads("b") == {"a", "b"}


def test_a_compensation_whose_from_cannot_be_evaluated_is_unmade():
    workflow = dag(s("b", compensate={"type": "echo", "payload": {"n": {"$from": "length(steps.b.result.n)"}}}))
    start = compensation_start(workflow, "b", {"b": OK}, {"b": {"n": 3}}, max_payload_bytes=1000)
    assert start.error_type == EXPRESSION_FAILED


# ---------------------------------------------------------------- checks and ids


def errors(*specs: dict[str, Any]) -> dict[str, str]:
    return {
        e.field: e.message for e in check_steps([WorkflowStep.model_validate({"type": "echo", **x}) for x in specs])
    }


def test_irreversible_with_a_compensate_is_refused_at_the_field():
    found = errors(s("a", irreversible=True, compensate=UNDO))
    assert list(found) == ["steps[0].irreversible"]


def test_a_compensations_from_may_read_its_step_and_upstream_only():
    reading_self = {"type": "echo", "payload": {"x": {"$from": "steps.b.result"}}}
    reading_other = {"type": "echo", "payload": {"x": {"$from": "steps.c.result"}}}
    assert errors(s("a"), s("b", "a", compensate=reading_self)) == {}
    found = errors(s("a"), s("b", "a", compensate=reading_other), s("c"))
    assert found == {
        "steps[1].compensate.payload.x.$from": "reads step 'c', which is neither 'b' itself nor upstream of it"
    }


def test_the_factory_names_a_compensations_unknown_type_and_bad_payload():
    steps = [
        WorkflowStep.model_validate({"id": "a", "type": "echo", "compensate": {"type": "carrier-pigeon"}}),
        WorkflowStep.model_validate(
            {"id": "b", "type": "echo", "compensate": {"type": "http", "payload": {"url": "ftp://x", "method": "GET"}}}
        ),
    ]
    with pytest.raises(InvalidInput) as raised:
        WorkflowFactory(shards=4).check_steps("default", steps)
    assert {e.field for e in raised.value.errors} == {"steps[0].compensate.type", "steps[1].compensate.payload.url"}


def test_a_compensations_run_id_names_its_step_and_sorts_after_the_steps_run():
    workflow_run_id = "w01m7z3q8h2c4v6b8n0m2k4j6h.1795262400000.m"
    run_id = compensation_run_id_for(workflow_run_id, "hotel")
    parsed = parse_run_id(run_id)
    assert parsed is not None
    assert (parsed.step_id, parsed.compensation, parsed.workflow_run_id) == ("hotel", True, workflow_run_id)
    step_sort = run_key(step_run_id_for(workflow_run_id, "hotel"))["sk"]["S"]
    assert run_key(run_id)["sk"]["S"] == step_sort + "#c"
    assert parse_run_id(step_run_id_for(workflow_run_id, "hotel")).compensation is False  # type: ignore[union-attr]
