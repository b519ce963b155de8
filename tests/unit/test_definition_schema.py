"""The JSON Schema of the definition files (tickwork_cli.definition_schema, docs/jobs-as-code.md): committed as the
models make it, a valid JSON Schema, met by every example definition file in docs/examples, and refusing what the
API's models refuse, naming the field."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from pydantic import ValidationError
from tickwork_cli.definition_files import as_data
from tickwork_cli.definition_schema import KIND_MODELS, SCHEMA_FILE, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    p for p in (ROOT / "docs" / "examples").rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file()
)


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _errors(validator: Draft202012Validator, document: Any) -> list[tuple[str, str]]:
    return sorted((".".join(map(str, e.absolute_path)), e.message) for e in validator.iter_errors(document))


def test_the_committed_schema_is_what_the_models_make():
    """In a process of its own, whose registry holds only the built-in job types (this one may hold the tests')."""
    done = subprocess.run(
        [sys.executable, "-m", "tickwork_cli.definition_schema", "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_check_fails_on_a_schema_file_that_drifted_from_the_models(tmp_path, capsys):
    drifted = tmp_path / "schema.json"
    drifted.write_text(SCHEMA_FILE.read_text(encoding="utf-8").replace('"maxLength": 200', '"maxLength": 100', 1))
    assert main(["--check", "--out", str(drifted)]) == 1
    assert "differs from the models" in capsys.readouterr().err
    assert main(["--check", "--out", str(tmp_path / "absent.json")]) == 1


def test_the_schema_is_a_valid_json_schema_with_a_definition_of_each_kind():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for kind, model in KIND_MODELS.items():
        assert schema["$defs"][kind]["properties"]["kind"] == {"const": kind}
        fields = {f.alias or n for n, f in model.model_fields.items()}
        if kind == "freeze":  # named in a file, and ending at an instant
            fields = fields - {"for_seconds"} | {"name"}
        assert set(schema["$defs"][kind]["properties"]) - {"kind"} == fields
        assert {"kind", "name"} <= set(schema["$defs"][kind]["required"])


def test_there_are_example_definition_files_and_each_one_names_the_schema():
    assert {p.name for p in EXAMPLES} >= {"calendars.yaml", "jobs.yaml", "workflows.json", "freezes.yaml"}
    for example in EXAMPLES:
        if example.suffix != ".json":
            first = example.read_text(encoding="utf-8").splitlines()[0]
            assert first.startswith("# yaml-language-server: $schema="), example
            assert (example.parent / first.split("=", 1)[1]).resolve() == SCHEMA_FILE, example


@pytest.mark.parametrize("example", EXAMPLES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLES])
def test_every_example_definition_file_meets_the_schema(example, validator):
    documents = [as_data(d) for d in yaml.safe_load_all(example.read_text(encoding="utf-8")) if d is not None]
    assert documents
    for document in documents:
        assert _errors(validator, document) == []


def test_the_pages_yaml_examples_meet_the_schema(validator):
    page = (ROOT / "docs" / "jobs-as-code.md").read_text(encoding="utf-8")
    blocks = [textwrap.dedent(b) for _, b in re.findall(r"^( *)```yaml\n(.*?)\n\1```", page, re.S | re.M)]
    # Not the CloudFormation templates (their tags): tests/template/test_team_stack_example.py deploys those.
    blocks = [b for b in blocks if not re.search(r"^Resources:", b, re.M)]
    assert len(blocks) >= 2
    for block in blocks:
        for document in yaml.safe_load_all(block):
            assert _errors(validator, as_data(document)) == []


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"kind": "job", "name": "a", "type": "echo", "schedule": {}},
            ("schedule", "{} is not valid under any of the given schemas"),
        ),
        (
            {"kind": "job", "name": "a", "type": "echo", "schedule": {"rate": "1 hour"}, "colour": "red"},
            ("", "Additional properties are not allowed ('colour' was unexpected)"),
        ),
        (
            {"kind": "cronjob", "name": "a"},
            ("kind", "'cronjob' is not one of ['calendar', 'job', 'workflow', 'freeze']"),
        ),
        ([{"kind": "calendar", "name": "h", "windows": []}], ("0.windows", "[] should be non-empty")),
        (
            {"kind": "workflow", "name": "w", "schedule": {"rate": "1 hour"}, "steps": [], "calendars": [""]},
            ("calendars.0", "'' should be non-empty"),
        ),
        (
            {"kind": "freeze", "name": "r", "selector": {}, "reason": "x", "until": "2026-12-24T00:00:00Z"},
            ("selector", "{} is not valid under any of the given schemas"),
        ),
    ],
)
def test_a_definition_the_api_refuses_is_refused_by_the_schema_naming_the_field(validator, document, expected):
    assert expected in _errors(validator, document)
    (definition,) = document if isinstance(document, list) else [document]
    named = definition["kind"] != "freeze"  # a freeze's name is the file's, not the API's
    body = {k: v for k, v in definition.items() if k != "kind" and (named or k != "name")}
    if definition["kind"] in KIND_MODELS:  # the model the schema is made of refuses it too
        with pytest.raises(ValidationError):
            KIND_MODELS[definition["kind"]].model_validate(body)


def test_a_definition_names_its_calendars_by_name_not_by_id(validator):
    job = {"kind": "job", "name": "a", "type": "echo", "schedule": {"rate": "1 hour"}, "calendars": ["holidays"]}
    assert _errors(validator, job) == []
    assert _errors(validator, {**job, "calendars": ["holidays", "holidays"]}) == [
        ("calendars", "['holidays', 'holidays'] has non-unique elements")
    ]


def test_a_freeze_in_a_file_ends_at_until_not_for_seconds_as_plan_says(validator):
    """The API takes for_seconds; a file does not (tickwork_cli.desired_state: it would count from each apply)."""
    counted = {"kind": "freeze", "name": "r", "selector": {"all": True}, "reason": "x", "for_seconds": 60}
    assert _errors(validator, counted) == [
        ("", "'until' is a required property"),
        ("", "Additional properties are not allowed ('for_seconds' was unexpected)"),
    ]
    del counted["for_seconds"]
    assert _errors(validator, {**counted, "until": "2026-12-24T00:00:00Z"}) == []
