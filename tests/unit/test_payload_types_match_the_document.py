"""Each registered job type's payload takes what its schema in the OpenAPI document says, and no more: a field the
document calls a number or a boolean refuses the other JSON types (pydantic's lax mode would take `true` for a
number, `"5"` for an integer, `"yes"` for a boolean). The in-process fuzz found a test type's `sleep` taking
`false`: the test types, registered beside the built-in ones in a test process, are held to the same."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from tickwork.jobtypes import registry

import tests.durable_jobtypes
import tests.testing_jobtypes
import tests.workflow_runs  # noqa: F401  (registers its types)

WRONG: dict[str, list[Any]] = {
    "number": [True, False, "5"],
    "integer": [True, "5", 1.5],
    "boolean": [1, 0, "true", "yes"],
}


def _typed_fields() -> list[tuple[str, str, str]]:
    fields = []
    for name in registry.names():
        schema = registry.get(name).payload_model.model_json_schema()
        for field, prop in schema.get("properties", {}).items():
            if prop.get("type") in WRONG:
                fields.append((name, field, prop["type"]))
    return fields


FIELDS = _typed_fields()


def test_the_registered_types_have_fields_the_document_types_as_numbers_and_booleans() -> None:
    types = {name for name, _, _ in FIELDS}
    assert {"echo", "progress-reports", "checkpoint-export", "long-export"} <= types


@pytest.mark.parametrize(("job_type", "field", "json_type"), FIELDS, ids=[f"{t}.{f}" for t, f, _ in FIELDS])
def test_a_field_the_document_types_refuses_every_other_json_type(job_type: str, field: str, json_type: str) -> None:
    for value in WRONG[json_type]:
        with pytest.raises(ValidationError) as refused:
            registry.get(job_type).parse({field: value})
        assert any(error["loc"][:1] == (field,) for error in refused.value.errors()), (value, refused.value)
