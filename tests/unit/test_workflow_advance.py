"""plan_advance, rule_outcome and workflow_status (tickwork.model.workflow.advance), and JMESPath conditions and $from
(tickwork.model.workflow.expressions): pure, no AWS."""

from __future__ import annotations

from typing import Any

import pytest
from tickwork.model.states import SkipReason
from tickwork.model.workflow.advance import (
    EXPRESSION_FAILED,
    UPSTREAM_RESULT_TOO_LARGE,
    OversizedResult,
    StepState,
    StepStatus,
    WorkflowRunStatus,
    deciding_reads,
    plan_advance,
    rule_outcome,
    step_start,
    workflow_status,
)
from tickwork.model.workflow.definition import Dag, TriggerRule, WorkflowStep
from tickwork.model.workflow.expressions import holds, referenced_steps, resolve_payload

LIMIT = 1000
OK = StepState(StepStatus.SUCCEEDED)
FAILED = StepState(StepStatus.FAILED)
QUEUED = StepState(StepStatus.QUEUED)
SKIPPED_FAILED = StepState(StepStatus.SKIPPED, SkipReason.UPSTREAM_FAILED)
SKIPPED_CONDITION = StepState(StepStatus.SKIPPED, SkipReason.CONDITION_FALSE)


def dag(*specs: dict[str, Any]) -> Dag:
    return Dag([WorkflowStep.model_validate({"type": "echo", **spec}) for spec in specs])


def s(sid: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "depends_on": list(depends_on), **fields}


# ---------------------------------------------------------------- trigger rules


@pytest.mark.parametrize(
    ("rule", "upstream", "outcome"),
    [
        (TriggerRule.ALL_SUCCESS, [OK, OK], None),
        (TriggerRule.ALL_SUCCESS, [OK, FAILED], SkipReason.UPSTREAM_FAILED),
        (TriggerRule.ALL_SUCCESS, [OK, SKIPPED_CONDITION], SkipReason.UPSTREAM_SKIPPED),
        (TriggerRule.ALL_DONE, [FAILED, SKIPPED_CONDITION], None),
        (TriggerRule.ALL_DONE, [OK], None),
        (TriggerRule.ALL_FAILED, [FAILED, SKIPPED_FAILED], None),
        (TriggerRule.ALL_FAILED, [FAILED, OK], SkipReason.RULE_NOT_MET),
        (TriggerRule.ONE_SUCCESS, [FAILED, OK], None),
        (TriggerRule.ONE_SUCCESS, [FAILED, FAILED], SkipReason.UPSTREAM_FAILED),
        (TriggerRule.ONE_SUCCESS, [SKIPPED_CONDITION], SkipReason.UPSTREAM_SKIPPED),
        (TriggerRule.ONE_FAILED, [OK, SKIPPED_FAILED], None),
        (TriggerRule.ONE_FAILED, [OK, OK], SkipReason.RULE_NOT_MET),
        (TriggerRule.NONE_FAILED, [OK, SKIPPED_CONDITION], None),
        (TriggerRule.NONE_FAILED, [OK, FAILED], SkipReason.UPSTREAM_FAILED),
    ],
)
def test_each_trigger_rule_holds_or_says_why_not(rule, upstream, outcome):
    assert rule_outcome(rule, upstream) is outcome


def test_a_root_always_starts():
    assert all(rule_outcome(rule, []) is None for rule in TriggerRule)


# ---------------------------------------------------------------- conditions and $from


DOC = {"steps": {"a": {"status": "SUCCEEDED", "result": {"rows": [{"id": 1}, {"id": 2}], "n": 0, "none": None}}}}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("steps.a.result.n", True),  # 0 is true in JMESPath
        ("steps.a.result.none", False),
        ("steps.a.result.missing", False),
        ("length(steps.a.result.rows) > `1`", True),
        ("steps.a.result.rows[?id > `5`]", False),  # an empty list is false
        ("steps.a.status == 'SUCCEEDED'", True),
    ],
)
def test_a_condition_is_true_or_false_by_jmespaths_rules(condition, expected):
    assert holds(condition, DOC) is expected


def test_from_values_are_resolved_anywhere_in_a_payload():
    payload = {
        "ids": {"$from": "steps.a.result.rows[].id"},
        "nested": {"deep": [{"first": {"$from": "steps.a.result.rows[0]"}}, "literal"]},
        "null": {"$from": "steps.a.result.none"},
        "missing": {"$from": "steps.a.result.nope.nothing"},
        "kept": 7,
    }
    assert resolve_payload(payload, DOC) == {
        "ids": [1, 2],
        "nested": {"deep": [{"first": {"id": 1}}, "literal"]},
        "null": None,
        "missing": None,
        "kept": 7,
    }


def test_referenced_steps_are_read_from_the_expression():
    assert referenced_steps("steps.a.result.x && steps.b.status") == {"a", "b"}
    assert referenced_steps("keys(steps)") is None


# ---------------------------------------------------------------- plan_advance


def test_roots_start_and_a_false_root_condition_skips_its_downstream_at_once():
    graph = dag(s("a"), s("b", condition="`false`"), s("c", "b"), s("d", "a"))
    plan = plan_advance(graph, {}, {}, max_payload_bytes=LIMIT)
    assert [start.step_id for start in plan.start] == ["a"]
    assert plan.skip == [("b", SkipReason.CONDITION_FALSE), ("c", SkipReason.UPSTREAM_SKIPPED)]
    assert plan.status is None  # a is not done yet


def test_a_step_waits_until_all_its_upstream_steps_are_terminal():
    graph = dag(s("a"), s("b"), s("c", "a", "b", trigger_rule="one_success"))
    plan = plan_advance(graph, {"a": OK, "b": QUEUED}, {}, max_payload_bytes=LIMIT)
    assert (plan.start, plan.skip, plan.status) == ([], [], None)


def test_a_failure_propagates_as_skips_down_the_graph_in_one_plan():
    graph = dag(s("a"), s("b", "a"), s("c", "b"), s("alert", "a", "b", "c", trigger_rule="one_failed"))
    plan = plan_advance(graph, {"a": FAILED}, {}, max_payload_bytes=LIMIT)
    assert plan.skip == [("b", SkipReason.UPSTREAM_FAILED), ("c", SkipReason.UPSTREAM_FAILED)]
    assert [start.step_id for start in plan.start] == ["alert"]


def test_a_started_step_gets_its_payload_resolved_from_upstream_results():
    graph = dag(s("a"), s("b", "a", payload={"rows": {"$from": "steps.a.result.rows"}, "fixed": 1}))
    states = {"a": OK}
    assert deciding_reads(graph, states) == {"a"}
    plan = plan_advance(graph, states, {"a": {"rows": [1, 2]}}, max_payload_bytes=LIMIT)
    assert plan.start[0].payload == {"rows": [1, 2], "fixed": 1}
    assert plan.start[0].error is None
    # The same start, remade later from the same states and results (a run whose creator died).
    assert step_start(graph, "b", states, {"a": {"rows": [1, 2]}}, max_payload_bytes=LIMIT) == plan.start[0]


def test_a_resolved_payload_too_large_is_an_error_not_a_truncation():
    graph = dag(s("a"), s("b", "a", payload={"x": {"$from": "steps.a.result"}}))
    plan = plan_advance(graph, {"a": OK}, {"a": "y" * LIMIT}, max_payload_bytes=LIMIT)
    (start,) = plan.start
    assert start.payload == {}
    assert start.error is not None
    assert "over the limit of 1000" in start.error


@pytest.mark.parametrize(
    ("fields", "result", "named"),
    [
        ({"condition": "contains(steps.a.result.tags, 'urgent')"}, {}, "the condition"),
        ({"condition": "starts_with(steps.a.result.name, 'x')"}, {"name": None}, "the condition"),
        ({"condition": "length(steps.a.result.n) > `1`"}, {"n": 3}, "the condition"),
        ({"payload": {"total": {"$from": "sum(steps.a.result.values)"}}}, {"values": [1, 2, "three"]}, "payload.total"),
    ],
    ids=["contains of a missing list", "starts_with of null", "length of a number", "sum of a string"],
)
def test_a_jmespath_error_at_evaluation_fails_the_step_with_a_reason_naming_the_expression(fields, result, named):
    """An expression that cannot be evaluated is a decision, not an exception that stalls the run: the step is
    started FAILED (its run is created FAILED with the reason), and the run goes on by the rules."""
    graph = dag(s("a"), s("b", "a", **fields), s("c", "b"))
    expression = fields.get("condition") or fields["payload"]["total"]["$from"]
    plan = plan_advance(graph, {"a": OK}, {"a": result}, max_payload_bytes=LIMIT)
    (start,) = plan.start
    assert (start.step_id, start.payload, start.error_type) == ("b", {}, EXPRESSION_FAILED)
    assert start.error is not None
    assert named in start.error
    assert f"`{expression}`" in start.error
    assert "invalid type" in start.error  # JMESPath's own words
    if "payload" in fields:  # the same states and results make the same failure, however often it is made
        assert step_start(graph, "b", {"a": OK}, {"a": result}, max_payload_bytes=LIMIT) == start
    # Once recorded FAILED, its downstream step is decided by the rules, and the run ends.
    after = plan_advance(graph, {"a": OK, "b": FAILED}, {"a": result}, max_payload_bytes=LIMIT)
    assert (after.skip, after.status) == ([("c", SkipReason.UPSTREAM_FAILED)], WorkflowRunStatus.FAILED)


@pytest.mark.parametrize(
    "fields",
    [{"condition": "steps.a.result.go"}, {"payload": {"rows": {"$from": "steps.a.result.rows"}}}],
    ids=["a condition", "a $from"],
)
def test_an_upstream_result_too_large_to_read_fails_the_step_that_reads_it_naming_size_and_cap(fields):
    """A result over the read cap was not read: a step whose condition or `$from` reads it is started FAILED
    with a reason naming it, the upstream step, the size and the cap; a step that does not read it starts."""
    graph = dag(s("a"), s("b", "a", **fields), s("c", "a"))
    results = {"a": OversizedResult(size=5_000_000, max_bytes=1_048_576)}
    plan = plan_advance(graph, {"a": OK}, results, max_payload_bytes=LIMIT)
    failed, plain = plan.start
    assert (failed.step_id, failed.payload, failed.error_type) == ("b", {}, UPSTREAM_RESULT_TOO_LARGE)
    assert failed.error is not None
    assert "step 'b'" in failed.error
    assert "step 'a' is 5000000 bytes, over the 1048576 bytes" in failed.error
    assert (plain.step_id, plain.error) == ("c", None)
    assert step_start(graph, "b", {"a": OK}, results, max_payload_bytes=LIMIT) == failed


def test_a_condition_false_skips_and_a_condition_true_starts():
    graph = dag(s("a"), s("yes", "a", condition="steps.a.result.go"), s("no", "a", condition="!steps.a.result.go"))
    plan = plan_advance(graph, {"a": OK}, {"a": {"go": True}}, max_payload_bytes=LIMIT)
    assert [start.step_id for start in plan.start] == ["yes"]
    assert plan.skip == [("no", SkipReason.CONDITION_FALSE)]


def test_a_cancelled_run_starts_nothing_and_skips_every_pending_step():
    graph = dag(s("a"), s("b", "a"), s("c"))
    plan = plan_advance(graph, {"a": OK, "c": QUEUED}, {}, max_payload_bytes=LIMIT, cancelled=True)
    assert plan.start == []
    assert plan.skip == [("b", SkipReason.CANCELLED)]


def test_the_plan_says_the_run_has_ended_once_every_step_is_decided_terminal():
    graph = dag(s("a"), s("b", "a"))
    plan = plan_advance(graph, {"a": FAILED}, {}, max_payload_bytes=LIMIT)
    assert plan.skip == [("b", SkipReason.UPSTREAM_FAILED)]
    assert plan.status is WorkflowRunStatus.FAILED


# ---------------------------------------------------------------- workflow_status


def test_status_is_none_while_a_step_is_not_terminal():
    assert workflow_status(dag(s("a"), s("b")), {"a": OK, "b": QUEUED}) is None


def test_an_unhandled_failure_reaching_a_leaf_fails_the_run():
    graph = dag(s("a"), s("b", "a"))
    assert workflow_status(graph, {"a": FAILED, "b": SKIPPED_FAILED}) is WorkflowRunStatus.FAILED
    assert workflow_status(dag(s("a")), {"a": FAILED}) is WorkflowRunStatus.FAILED


def test_a_failure_handled_by_a_downstream_step_that_succeeded_does_not_fail_the_run():
    graph = dag(s("a"), s("cleanup", "a", trigger_rule="all_done"))
    assert workflow_status(graph, {"a": FAILED, "cleanup": OK}) is WorkflowRunStatus.SUCCEEDED


def test_a_handler_that_is_not_on_every_path_leaves_the_failure_unhandled():
    graph = dag(s("a"), s("b", "a"), s("alert", "a", trigger_rule="one_failed"))
    states = {"a": FAILED, "b": SKIPPED_FAILED, "alert": OK}
    assert workflow_status(graph, states) is WorkflowRunStatus.FAILED


def test_skips_by_condition_and_unmet_rules_are_success():
    graph = dag(s("a"), s("b", "a"), s("alert", "a", trigger_rule="one_failed"))
    states = {"a": OK, "b": SKIPPED_CONDITION, "alert": StepState(StepStatus.SKIPPED, SkipReason.RULE_NOT_MET)}
    assert workflow_status(graph, states) is WorkflowRunStatus.SUCCEEDED
