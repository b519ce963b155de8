"""The JSON Schema of the definition files of `tickwork plan` and `tickwork apply` (docs/jobs-as-code.md), for
editors: a definition is the API's own request body, made from the models the API validates it with (JobSpec,
WorkflowSpec, CalendarDefinition, FreezeSpec), with its `kind` beside it, a job's or workflow's calendars named by
name, and a freeze's `name` (its key) and window as instants (`until`, not `for_seconds`); a document is one
definition or a list of them. Generated and committed (docs/schema/), as the OpenAPI document is.

    python -m tickwork_cli.definition_schema           # rewrite docs/schema/tickwork-definitions.schema.json
    python -m tickwork_cli.definition_schema --check   # exit 1 if the file differs from what the models make (a test)
    python -m tickwork_cli.definition_schema --job-type-modules acme_jobs --out jobs/tickwork.schema.json

A job's `type` and its `payload` are the types registered when it is made: the built-in ones in the committed file
(run in a process of its own, as the OpenAPI document's generator is); `--job-type-modules` adds a team's own.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from tickwork.control.api_bodies import JobSpec, WorkflowSpec
from tickwork.jobtypes import import_job_type_modules
from tickwork.model.calendars import CalendarDefinition
from tickwork.model.freezes import FreezeSpec

from tickwork_cli.desired_state import KINDS

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "schema" / "tickwork-definitions.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
KIND_MODELS: dict[str, type[BaseModel]] = {
    "calendar": CalendarDefinition,
    "job": JobSpec,
    "workflow": WorkflowSpec,
    "freeze": FreezeSpec,
}
CALENDAR_NAMES = "Names of calendars the files define or the tenant has, each once (apply puts in their ids)."
FREEZE_NAME = "Its key among the source's freezes (apply keeps it at the end of the freeze's reason)."


def definitions_schema() -> dict[str, Any]:
    """The schema: a document is a definition or a list of them; a definition is its kind's request body (under
    `$defs`, by kind), chosen by its `kind`. Chosen with if/then, not anyOf, so that an editor (or a validator)
    names the field that is wrong rather than that no branch fits."""
    assert tuple(KIND_MODELS) == KINDS, "a kind the files take has no model here"
    _, top = models_json_schema([(m, "validation") for m in KIND_MODELS.values()], ref_template="#/$defs/{model}")
    defs: dict[str, Any] = top["$defs"]
    calendar_name = defs[CalendarDefinition.__name__]["properties"]["name"]
    for kind, model in KIND_MODELS.items():
        body = defs.pop(model.__name__)  # no other model refers to a request body: it is the definition's
        body["properties"] = {"kind": {"const": kind}, **body["properties"]}
        body["required"] = ["kind", *body.get("required", [])]
        if "calendars" in body["properties"]:
            calendars = body["properties"]["calendars"]
            calendars["items"] = {k: v for k, v in calendar_name.items() if k != "title"}
            calendars["description"] = CALENDAR_NAMES
        defs[kind] = body
    _as_a_file_gives_it(defs["freeze"], {**calendar_name, "title": "Name", "description": FREEZE_NAME})
    defs["definition"] = {
        "type": "object",
        "required": ["kind", "name"],
        "properties": {"kind": {"enum": list(KINDS), "description": "What the definition is."}},
        "allOf": [
            {"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]}, "then": {"$ref": f"#/$defs/{kind}"}}
            for kind in KINDS
        ],
    }
    return {
        "$schema": DIALECT,
        "title": "Tickwork definitions",
        "description": "A job, workflow or calendar (or a list of them) for tickwork plan and tickwork apply: the "
        "API's request body with its kind; its name is its key within the tenant (docs/jobs-as-code.md).",
        "if": {"type": "array"},
        "then": {"items": {"$ref": "#/$defs/definition"}},
        "else": {"$ref": "#/$defs/definition"},
        "$defs": dict(sorted(defs.items())),
    }


def _as_a_file_gives_it(freeze: dict[str, Any], name: dict[str, Any]) -> None:
    """A freeze as a file defines it (tickwork_cli.desired_state): named, and ending at an instant, `until`, since
    `for_seconds` would count from each apply."""
    properties = freeze["properties"]
    properties.pop("for_seconds")
    freeze["properties"] = {"kind": properties.pop("kind"), "name": name, **properties}
    freeze.pop("oneOf")  # until or for_seconds: until it is
    freeze["required"] = ["kind", "name", *(r for r in freeze["required"] if r != "kind"), "until"]


def schema_text() -> str:
    return json.dumps(definitions_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tickwork_cli.definition_schema", description=__doc__)
    parser.add_argument("--out", type=Path, default=SCHEMA_FILE, help="the file to write (or to --check)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs from what the models make")
    parser.add_argument("--job-type-modules", default="", help="comma-separated modules of job types of your own")
    args = parser.parse_args(argv)
    import_job_type_modules(m.strip() for m in args.job_type_modules.split(",") if m.strip())
    text = schema_text()
    if args.check:
        if not args.out.is_file() or args.out.read_text(encoding="utf-8") != text:
            print(f"{args.out} differs from the models: run python -m tickwork_cli.definition_schema", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
