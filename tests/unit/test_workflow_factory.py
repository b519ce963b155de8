"""A workflow spec made into a checked Workflow (tickwork.control.workflow_factory), and how workflows and their runs
are stored (tickwork.store.codec): pure, no AWS."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import WorkflowSpec
from tickwork.control.workflow_factory import MAX_WORKFLOW_ITEM_BYTES, WorkflowFactory
from tickwork.model.errors import InvalidInput, ItemTooLarge, TooLarge
from tickwork.model.ids import is_workflow_id, step_run_id_for
from tickwork.model.run import Run
from tickwork.model.states import RunStatus, SkipReason
from tickwork.model.workflow.advance import StepStatus, WorkflowRunStatus
from tickwork.model.workflow.runs import StepEntry, WorkflowRunRecord, WorkflowSnapshot
from tickwork.store.codec import (
    ROOTS_DEADLINE_SECONDS,
    deserialize,
    run_from_attrs,
    run_key,
    run_to_attrs,
    workflow_from_attrs,
    workflow_run_from_attrs,
    workflow_run_key,
    workflow_run_to_attrs,
    workflow_to_item,
)

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
FACTORY = WorkflowFactory(shards=4)


def spec(*steps: dict[str, Any], **fields: Any) -> WorkflowSpec:
    body = {"name": "wf", "schedule": {"at": NOW + timedelta(hours=1)}, "steps": list(steps), **fields}
    return WorkflowSpec.model_validate(body)


def fields_of(raised: pytest.ExceptionInfo[InvalidInput]) -> set[str]:
    return {e.field for e in raised.value.errors}


def test_a_workflow_from_its_spec():
    workflow = FACTORY.new_workflow(
        "t1",
        spec({"id": "a", "type": "echo", "priority": 8}, {"id": "b", "type": "echo", "depends_on": ["a"]}),
        now=NOW,
    )
    assert is_workflow_id(workflow.id)
    assert workflow.next_run_at == NOW + timedelta(hours=1)
    assert (workflow.step_priority("a"), workflow.step_priority("b")) == (8, 5)
    assert workflow.step_retry("b") == workflow.retry


def test_every_bad_step_is_named_at_once_type_payload_and_dag():
    with pytest.raises(InvalidInput) as raised:
        FACTORY.new_workflow(
            "t1",
            spec(
                {"id": "a", "type": "nope"},
                {"id": "b", "type": "http", "payload": {"url": "ftp://x", "method": "BREW"}},
                {"id": "c", "type": "echo", "depends_on": ["ghost"]},
            ),
            now=NOW,
        )
    assert fields_of(raised) == {
        "steps[0].type",
        "steps[1].payload.url",
        "steps[1].payload.method",
        "steps[2].depends_on[0]",
    }


def test_a_from_value_is_not_held_against_the_payload_model_but_the_rest_is():
    from_url = {"url": {"$from": "steps.a.result.url"}, "method": "BREW"}
    with pytest.raises(InvalidInput) as raised:
        FACTORY.check_steps(
            "default",
            spec(
                {"id": "a", "type": "echo"}, {"id": "b", "type": "http", "depends_on": ["a"], "payload": from_url}
            ).steps,
        )
    assert fields_of(raised) == {"steps[1].payload.method"}


def test_a_step_payload_over_the_limit_is_too_large():
    big = {"x": "y" * (256 * 1024)}
    with pytest.raises(TooLarge) as raised:
        FACTORY.new_workflow("t1", spec({"id": "a", "type": "echo", "payload": big}), now=NOW)
    assert [e.field for e in raised.value.errors] == ["steps[0].payload"]


def test_a_workflow_whose_steps_would_not_fit_an_item_with_its_runs_is_too_large():
    steps = [{"id": f"s{i}", "type": "echo", "payload": {"x": "y" * 4000}} for i in range(80)]
    with pytest.raises(ItemTooLarge) as raised:
        FACTORY.new_workflow("t1", spec(*steps), now=NOW)
    assert [e.field for e in raised.value.errors] == ["steps"]
    assert f"over the limit of {MAX_WORKFLOW_ITEM_BYTES}" in str(raised.value)


def test_a_schedule_with_no_future_occurrence_is_refused():
    with pytest.raises(InvalidInput) as raised:
        FACTORY.new_workflow(
            "t1", spec({"id": "a", "type": "echo"}, schedule={"at": NOW - timedelta(seconds=60)}), now=NOW
        )
    assert fields_of(raised) == {"schedule.at"}


# ---------------------------------------------------------------- stored


def test_a_workflow_is_stored_where_a_job_would_be_and_reads_back():
    workflow = FACTORY.new_workflow("t1", spec({"id": "a", "type": "echo", "payload": {"n": 1.5}}), now=NOW)
    item = deserialize(workflow_to_item(workflow, 4))
    assert (item["pk"], item["sk"], item["kind"], item["job_id"]) == (
        f"JOB#{workflow.id}",
        "JOB",
        "WORKFLOW",
        workflow.id,
    )
    assert item["tenant_key"] == "T#t1#WORKFLOW"
    assert json.loads(item["steps_json"])[0]["payload"] == {"n": 1.5}
    assert {"due_at", "due_shard"} <= item.keys()  # ACTIVE with a next occurrence: claimable
    assert workflow_from_attrs(item) == workflow


def test_a_workflow_run_round_trips_with_its_snapshot_and_map():
    workflow = FACTORY.new_workflow("t1", spec({"id": "a", "type": "echo"}, {"id": "b-2", "type": "echo"}), now=NOW)
    run_id = f"{workflow.id}.{int(NOW.timestamp() * 1000):013d}"
    record = WorkflowRunRecord(
        id=run_id,
        workflow_id=workflow.id,
        tenant="t1",
        scheduled_for=NOW,
        status=WorkflowRunStatus.RUNNING,
        steps={
            "a": StepEntry(status=StepStatus.QUEUED, run_id=step_run_id_for(run_id, "a")),
            "b-2": StepEntry(status=StepStatus.SKIPPED, skip_reason=SkipReason.CONDITION_FALSE),
        },
        definition=WorkflowSnapshot.of(workflow),
        last_occurrence=True,
    )
    attrs = workflow_run_to_attrs(record)
    assert (attrs["pk"], attrs["sk"]) == (f"JOB#{workflow.id}", f"RUN#{int(NOW.timestamp() * 1000):013d}")
    assert workflow_run_key(run_id) == {"pk": {"S": attrs["pk"]}, "sk": {"S": attrs["sk"]}}
    assert workflow_run_from_attrs(attrs) == record


def test_a_step_run_keeps_its_payload_as_json_text_under_its_workflow():
    run_id = step_run_id_for("w" + "0" * 25 + ".1795262400000.m", "load")
    run = Run(
        id=run_id,
        job_id="w" + "0" * 25,
        tenant="t1",
        scheduled_for=NOW,
        status=RunStatus.QUEUED,
        workflow_run_id="w" + "0" * 25 + ".1795262400000.m",
        step_id="load",
        payload={"rows": [1, 2.5, None]},
    )
    attrs = run_to_attrs(run)
    assert attrs["sk"] == "STEP#1795262400000#m#load" == run_key(run_id)["sk"]["S"]
    assert json.loads(attrs["payload_json"]) == {"rows": [1, 2.5, None]}
    assert "payload" not in attrs
    assert run_from_attrs(attrs) == run


def test_a_workflow_s_item_carries_its_root_steps_soonest_deadline_for_the_tick_s_order():
    """The tick orders a held-back workflow by the first runs its claim starts (its roots'), from its entry."""
    steps = [
        {"id": "a", "type": "echo", "deadline": {"within_seconds": 300}},
        {"id": "b", "type": "echo", "deadline": {"within_seconds": 120}},
        {"id": "c", "type": "echo", "depends_on": ["a"], "deadline": {"within_seconds": 60}},
    ]
    workflow = FACTORY.new_workflow("t1", spec(*steps), now=NOW)
    item = deserialize(workflow_to_item(workflow, 4))
    assert item[ROOTS_DEADLINE_SECONDS] == 120
    assert workflow_from_attrs(item) == workflow
    plain = FACTORY.new_workflow("t1", spec({"id": "a", "type": "echo"}, steps[2]), now=NOW)
    assert ROOTS_DEADLINE_SECONDS not in deserialize(workflow_to_item(plain, 4))
