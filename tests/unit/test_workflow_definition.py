"""The workflow definition's checks (tickwork.model.workflow.definition) and the DAG's questions: pure, no AWS."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from tickwork.model.workflow.definition import MAX_STEPS, Dag, WorkflowDefinition, WorkflowStep, check_steps


def steps(*specs: dict[str, Any]) -> list[WorkflowStep]:
    return [WorkflowStep.model_validate({"type": "echo", **spec}) for spec in specs]


def s(sid: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "depends_on": list(depends_on), **fields}


def errors(*specs: dict[str, Any]) -> dict[str, str]:
    return {e.field: e.message for e in check_steps(steps(*specs))}


def test_a_good_dag_has_no_errors():
    assert errors(s("a"), s("b", "a"), s("c", "a"), s("d", "b", "c", condition="steps.b.result.ok")) == {}


def test_a_cycle_is_named_along_the_way_work_flows():
    found = errors(s("a", "c"), s("b", "a"), s("c", "b"), s("free"))
    assert found == {"steps[1].depends_on": "the steps form a cycle: b -> c -> a -> b"}


def test_a_two_step_cycle():
    assert errors(s("a", "b"), s("b", "a")) == {"steps[1].depends_on": "the steps form a cycle: b -> a -> b"}


def test_an_unknown_step():
    assert errors(s("a"), s("b", "a", "ghost")) == {"steps[1].depends_on[1]": "unknown step 'ghost'"}


def test_a_duplicate_step_id():
    assert errors(s("a"), s("b"), s("a")) == {"steps[2].id": "duplicate step id 'a' (also steps[0])"}


def test_a_step_that_depends_on_itself():
    assert errors(s("a", "a")) == {"steps[0].depends_on[0]": "step 'a' cannot depend on itself"}


def test_a_dependency_listed_twice():
    assert errors(s("a"), s("b", "a", "a")) == {"steps[1].depends_on[1]": "'a' is listed twice"}


def test_a_condition_reading_a_step_that_is_not_upstream():
    found = errors(s("a"), s("b"), s("c", "a", condition="steps.a.result && steps.b.result"))
    assert found == {"steps[2].condition": "reads step 'b', which is not upstream of 'c'"}


def test_a_from_reading_a_step_that_is_not_upstream_names_its_place_in_the_payload():
    found = errors(s("a"), s("b"), s("c", "a", payload={"rows": [{"x": {"$from": "steps.b.result"}}]}))
    assert found == {"steps[2].payload.rows[0].x.$from": "reads step 'b', which is not upstream of 'c'"}


def test_a_transitive_ancestor_is_upstream():
    assert errors(s("a"), s("b", "a"), s("c", "b", payload={"x": {"$from": "steps.a.result"}})) == {}


@pytest.mark.parametrize("expression", ["steps.a.result ==", "", "  ", "[?"])
def test_an_invalid_jmespath_expression(expression):
    found = errors(s("a"), s("b", "a", condition=expression) if expression else s("b", "a", condition="x ="))
    assert list(found) == ["steps[1].condition"]
    assert "JMESPath" in found["steps[1].condition"]


def test_an_invalid_from_expression_and_a_from_object_with_other_keys():
    found = errors(s("a"), s("b", "a", payload={"x": {"$from": "steps.a.[["}, "y": {"$from": "steps.a", "z": 1}}))
    assert set(found) == {"steps[1].payload.x.$from", "steps[1].payload.y.$from"}
    assert "JMESPath" in found["steps[1].payload.x.$from"]
    assert "exactly one key" in found["steps[1].payload.y.$from"]


def test_an_expression_over_all_steps_reads_every_upstream_step():
    dag = Dag(steps(s("a"), s("b"), s("c", "a", condition="length(keys(steps)) > `0`")))
    assert dag.reads("c") == {"a"}
    assert errors(s("a"), s("c", "a", condition="length(keys(steps)) > `0`")) == {}


@pytest.mark.parametrize("count", [0, MAX_STEPS + 1])
def test_no_steps_or_too_many(count):
    body = {"name": "wf", "schedule": {"rate": "1 hour"}, "steps": [s(f"s{i}") for i in range(count)]}
    for spec in body["steps"]:
        spec["type"] = "echo"
    with pytest.raises(ValidationError) as raised:
        WorkflowDefinition.model_validate(body)
    assert [e["loc"] for e in raised.value.errors()] == [("steps",)]


@pytest.mark.parametrize(
    ("spec", "field"), [(s("a", trigger_rule="sometimes"), "trigger_rule"), (s("no spaces"), "id")]
)
def test_an_unknown_trigger_rule_and_a_bad_step_id_are_refused_by_the_model(spec, field):
    with pytest.raises(ValidationError) as raised:
        steps(spec)
    assert [e["loc"] for e in raised.value.errors()] == [(field,)]


def test_topological_puts_every_step_after_its_upstream_in_the_callers_order():
    dag = Dag(steps(s("d", "b", "c"), s("c", "a"), s("b", "a"), s("a"), s("e")))
    assert dag.topological == ["a", "c", "b", "d", "e"]
    assert dag.roots == ["a", "e"]
    assert dag.leaves == ["d", "e"]
    assert dag.ancestors["d"] == {"a", "b", "c"}
    assert dag.downstream["a"] == ["c", "b"]
