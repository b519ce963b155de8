"""The files of `tickwork plan` and `tickwork apply` (docs/jobs-as-code.md): YAML or JSON, one definition a document
or a list of them per document, a folder read whole (its *.yaml, *.yml and *.json, sorted by path). Each definition
keeps where it is, its file and line and each field's, so that an error, the files' own or the API's 422, names
them. JSON is read as the YAML it also is, for its lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tickwork_cli.desired_state import KINDS, Definition, DefinitionError

SUFFIXES = (".yaml", ".yml", ".json")


def files_of(path: Path) -> list[Path]:
    """The definition files at `path`: the file itself, or a folder's, whole."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if path.is_file():
        return [path]
    raise DefinitionError(str(path), "no such file or folder")


def read_definitions(path: Path) -> list[Definition]:
    return [definition for file in files_of(path) for definition in read_file(file)]


def read_file(file: Path) -> list[Definition]:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(str(file), f"cannot read it: {exc}") from None
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark is not None else str(file)
        raise DefinitionError(where, f"not valid YAML or JSON: {getattr(exc, 'problem', None) or exc}") from None
    definitions = []
    for document in documents:
        if document is None:
            continue
        nodes = document.value if isinstance(document, yaml.SequenceNode) else [document]
        definitions += [_definition(file, node) for node in nodes]
    return definitions


def _definition(file: Path, node: yaml.Node) -> Definition:
    where = f"{file}:{node.start_mark.line + 1}"
    if not isinstance(node, yaml.MappingNode):
        raise DefinitionError(where, "a definition is an object with its kind and name")
    value = yaml.SafeLoader("").construct_document(node)  # type: ignore[no-untyped-call]
    lines: dict[str, str] = {}
    _lines_of(file, node, "", lines)
    kind, name = value.get("kind"), value.get("name")
    if kind not in KINDS:
        raise DefinitionError(lines.get("kind", where), f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if not isinstance(name, str) or not name:
        raise DefinitionError(lines.get("name", where), f"a {kind} needs a name: its key within the tenant")
    body = as_data({key: field for key, field in value.items() if key != "kind"})
    return Definition(kind, name, body, where, lines)


def _lines_of(file: Path, node: yaml.Node, path: str, lines: dict[str, str]) -> None:
    """Each field path's line: `schedule.cron`, `steps[0].type` (the API's spelling of a field)."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            at = f"{path}.{key.value}" if path else str(key.value)
            lines[at] = f"{file}:{key.start_mark.line + 1}"
            _lines_of(file, value, at, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            at = f"{path}[{index}]"
            lines[at] = f"{file}:{item.start_mark.line + 1}"
            _lines_of(file, item, at, lines)


def as_data(value: Any) -> Any:
    """A definition's value as JSON has it: YAML's dates and times (an unquoted `2026-12-01`) as ISO text."""
    if isinstance(value, dict):
        return {str(k): as_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_data(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
