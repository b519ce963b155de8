"""The PATCH bodies are derived from the definitions: every field a caller chooses can be changed (but a job's
type), with the definition's own rules, and none can be set to null."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError
from tickwork.control.api_bodies import JobSpec, JobUpdate, WorkflowUpdate, _patch_of
from tickwork.model.job import JobDefinition
from tickwork.model.workflow.definition import WorkflowDefinition


def _refused_field(model: type, body: dict) -> str:
    with pytest.raises(ValidationError) as refused:
        model.model_validate(body)
    return ".".join(str(part) for part in refused.value.errors()[0]["loc"])


def test_every_job_definition_field_but_its_type_is_in_the_job_update() -> None:
    assert list(JobUpdate.model_fields) == [name for name in JobDefinition.model_fields if name != "type"]


def test_every_workflow_definition_field_is_in_the_workflow_update() -> None:
    assert list(WorkflowUpdate.model_fields) == list(WorkflowDefinition.model_fields)


def test_a_field_added_to_a_definition_is_in_its_update() -> None:
    class Extended(JobSpec):
        note: str = Field(default="", max_length=3, description="A new field.")

    update = _patch_of(Extended, "ExtendedUpdate", "A test body.", without={"type"}, json_schema_extra=lambda _: None)

    assert update.model_fields["note"].description == "A new field."
    assert update.model_validate({"note": "abc"}).changes() == {"note": "abc"}
    assert _refused_field(update, {"note": "abcd"}) == "note"


def test_an_update_keeps_the_definitions_constraints() -> None:
    assert _refused_field(JobUpdate, {"priority": 11}) == "priority"
    assert _refused_field(JobUpdate, {"name": ""}) == "name"
    assert _refused_field(WorkflowUpdate, {"steps": []}) == "steps"


@pytest.mark.parametrize("field", ["circuit_breaker", "concurrency", "rate_limit", "priority", "payload"])
def test_an_update_refuses_null_even_where_the_definition_allows_none(field: str) -> None:
    assert _refused_field(JobUpdate, {field: None}) == field


def test_a_job_update_cannot_change_the_type() -> None:
    assert _refused_field(JobUpdate, {"type": "echo"}) == "type"


def test_an_update_changes_only_the_fields_it_names() -> None:
    assert JobUpdate.model_validate({"priority": 3}).changes() == {"priority": 3}
