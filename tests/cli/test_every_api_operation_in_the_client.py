"""Every operation of the API's OpenAPI document has a method of the typed Python client
(tickwork_cli.api_client), typed with the API's own models: the body it takes is the model the document names for
the request, and what it answers is the model the document names for the response (or, for a listing, an
iterator of the listing's items, its pages in that model). The `tickwork` command line calls the API through that
client alone, and has a command for every operation. A new API operation without a method, or without a command,
fails here."""

from __future__ import annotations

import ast
import json
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from tickwork_cli.api_client import OPERATIONS, Client, Listing

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "functions" / "api" / "openapi.json"
CLI = ROOT / "shared" / "tickwork_cli"

# Commands that name the client's method they call as a string.
COMMAND_SHAPES = {"call_by_id", "_job_state_command"}

# Answers the document gives no schema for: any JSON the handler returned, and the document itself.
UNTYPED_ANSWERS = {("GET", "/v1/runs/{run_id}/result"), ("GET", "/v1/openapi.json")}


def document_operations() -> dict[tuple[str, str], dict[str, Any]]:
    paths = json.loads(DOCUMENT.read_text(encoding="utf-8"))["paths"]
    return {
        (method.upper(), path): operation
        for path, item in paths.items()
        for method, operation in item.items()
        if method != "parameters"
    }


def _schema_name(schema: dict[str, Any] | None) -> str | None:
    """The component a body or answer is, by name (`#/components/schemas/JobSpec` -> JobSpec)."""
    for branch in [schema or {}, *(schema or {}).get("anyOf", [])]:
        if "$ref" in branch:
            return str(branch["$ref"]).rsplit("/", 1)[-1]
    return None


def _request_schema(operation: dict[str, Any]) -> str | None:
    content = (operation.get("requestBody") or {}).get("content", {})
    return _schema_name(content.get("application/json", {}).get("schema"))


def _answer_schema(operation: dict[str, Any]) -> str | None:
    answers = [a for status, a in operation.get("responses", {}).items() if status.startswith("2")]
    return _schema_name(answers[0].get("content", {}).get("application/json", {}).get("schema"))


def _models_in(annotation: Any) -> set[str]:
    """The pydantic models an annotation names, at any depth (`JobSpec | Mapping[...] | None` -> {JobSpec})."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {annotation.__name__}
    return set().union(*(_models_in(arg) for arg in typing.get_args(annotation)))


def _hints(name: str) -> dict[str, Any]:
    return typing.get_type_hints(getattr(Client, name))


def test_every_api_operation_has_a_method_of_the_client():
    document = set(document_operations())
    assert set(OPERATIONS) - document == set(), "the client calls an operation the API does not document"
    assert document - set(OPERATIONS) == set(), "API operations the client has no method for"
    assert [name for name in OPERATIONS.values() if not callable(getattr(Client, name, None))] == []
    assert len(set(OPERATIONS.values())) == len(OPERATIONS), "a method for each operation"


def test_each_method_takes_the_apis_own_model_of_its_request_body():
    wrong = []
    for key, operation in document_operations().items():
        wanted = _request_schema(operation)
        if wanted is None:
            continue
        hints = _hints(OPERATIONS[key])
        taken = set().union(*(_models_in(hint) for name, hint in hints.items() if name != "return"))
        if wanted not in taken:
            wrong.append(f"{OPERATIONS[key]} takes {sorted(taken)}, the API {wanted}")
    assert wrong == []


def test_each_method_answers_the_apis_own_model_of_its_answer():
    wrong = []
    for key, operation in document_operations().items():
        wanted = _answer_schema(operation)
        answered = _hints(OPERATIONS[key])["return"]
        if key in UNTYPED_ANSWERS:
            assert wanted is None, f"{key} has a model now: type its method's answer with it"
            continue
        if typing.get_origin(answered) is Listing:
            page, item = typing.get_args(answered)
            assert page.model_fields["items"].annotation == list[item], key
            answered = page
        elif typing.get_origin(answered) is list:  # an unpaginated listing's items (calendars, freezes)
            if _item_model(wanted) != typing.get_args(answered)[0]:
                wrong.append(f"{OPERATIONS[key]} answers {answered}, the API {wanted}'s items")
            continue
        if wanted not in _models_in(answered):
            wrong.append(f"{OPERATIONS[key]} answers {answered}, the API {wanted}")
    assert wrong == []


def _item_model(schema_name: str | None) -> Any:
    from tickwork.control import api_bodies

    listing = getattr(api_bodies, schema_name or "")
    return typing.get_args(listing.model_fields["items"].annotation)[0]


def _cli_modules() -> list[Path]:
    """The command line's modules, but the client itself."""
    return [path for path in sorted(CLI.rglob("*.py")) if "api_client" not in path.parts]


def _client_methods_the_cli_calls() -> set[str]:
    """What the command line calls on the client (`session.client.get_job`, `client.me`), and the methods a command
    names for call_by_id and the like."""
    called: set[str] = set()
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                owner = node.value
                name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
                if name == "client":
                    called.add(node.attr)
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in COMMAND_SHAPES:
                called |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return called


def test_the_cli_has_a_command_for_every_operation():
    called = _client_methods_the_cli_calls()
    assert {key for key, name in OPERATIONS.items() if name not in called} == set(), "API operations no command calls"


def test_the_cli_calls_the_api_only_through_the_typed_client():
    """The lower HTTP client (tickwork_cli.client) is the typed client's transport, and the console proxy's, which
    forwards the browser's requests as they are."""
    transport_users = []
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            imported = {alias.name for alias in node.names} if isinstance(node, ast.ImportFrom) else set()
            if "Client" in imported and getattr(node, "module", None) == "tickwork_cli.client":
                transport_users.append(path.relative_to(CLI).as_posix())
    assert transport_users == ["commands/console.py"]
