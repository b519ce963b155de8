"""JMESPath in workflows: a step's `condition`, and `{"$from": "<expression>"}` values in its payload.

Both are evaluated over one document, `{"steps": {<id>: {"status": ..., "result": <json>}}}`, of the step's
upstream steps (its ancestors in the DAG). Which steps an expression reads is known from its syntax tree
(`steps.<id>...`), so a definition naming a step that is not upstream is refused before anything is written,
and the executor reads from S3 only the results an expression really uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.visitor import TreeInterpreter

FROM_KEY = "$from"
ALL_STEPS = None  # referenced_steps' answer when an expression reads `steps` as a whole (`keys(steps)`)
# The bounds of an expression (docs/cron.md, "Bounds"): its length and how deeply it nests, checked at
# create and update; the nodes its evaluation may visit (each element a projection or a multi-select produces
# is a visit), checked as it runs: past it the evaluation fails (ExpressionFailed), whatever the data.
MAX_EXPRESSION_LENGTH = 2000
MAX_EXPRESSION_DEPTH = 50
MAX_EXPRESSION_VISITS = 100_000


def compile_expression(text: str) -> Any:
    """The compiled expression, or ValueError naming what is wrong with it (including too long or too deep)."""
    if not text.strip():
        raise ValueError("must be a JMESPath expression, not empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"is too long: at most {MAX_EXPRESSION_LENGTH} characters")
    if _nesting(text) > MAX_EXPRESSION_DEPTH:
        # JMESPath's parser recurses once per level: deep enough, Python's stack ends before it does.
        raise ValueError(f"is nested too deeply: at most {MAX_EXPRESSION_DEPTH} levels of (), [] and {{}}")
    try:
        return jmespath.compile(text)
    except JMESPathError as exc:
        raise ValueError(f"not a valid JMESPath expression: {str(exc).splitlines()[0]}") from None


def _nesting(text: str) -> int:
    """How deeply an expression's brackets nest, outside its quoted strings and literals."""
    deepest = depth = 0
    quote: str | None = None
    escaped = False
    for char in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


class _BoundedInterpreter(TreeInterpreter):
    """JMESPath's own interpreter, counting the nodes it visits: past MAX_EXPRESSION_VISITS it stops."""

    def __init__(self) -> None:
        super().__init__()
        self.visits = 0

    def visit(self, node: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        self.visits += 1
        if self.visits > MAX_EXPRESSION_VISITS:
            raise _TooMuchWork
        return super().visit(node, *args, **kwargs)


class _TooMuchWork(Exception):
    pass


def referenced_steps(text: str) -> set[str] | None:
    """The step ids an expression reads (`steps.<id>`), or ALL_STEPS if it reads `steps` some other way."""
    found: set[str] = set()
    whole = False

    def walk(node: dict[str, Any]) -> None:
        nonlocal whole
        children = node.get("children", [])
        if node.get("type") == "subexpression" and children and _is_field(children[0], "steps"):
            if len(children) > 1 and children[1].get("type") == "field":
                found.add(children[1]["value"])
                children = children[2:]
            else:
                whole = True
                children = children[1:]
        elif _is_field(node, "steps"):
            whole = True
        for child in children:
            if isinstance(child, dict):
                walk(child)

    walk(compile_expression(text).parsed)
    return ALL_STEPS if whole else found


def _is_field(node: Any, name: str) -> bool:
    return isinstance(node, dict) and node.get("type") == "field" and node.get("value") == name


def from_references(payload: Any, path: str = "payload") -> Iterator[tuple[str, Any]]:
    """Every `{"$from": <expression>}` in a payload, with its path (`payload.rows`, `payload.items[2]`).

    A `$from` object is exactly that one key; an object with other keys beside it is refused by the
    definition's checks (see definition), rather than guessed at."""
    if isinstance(payload, dict):
        if FROM_KEY in payload:
            yield path, payload
            return
        for key, value in payload.items():
            yield from from_references(value, f"{path}.{key}")
    elif isinstance(payload, list):
        for index, value in enumerate(payload):
            yield from from_references(value, f"{path}[{index}]")


class ExpressionFailed(Exception):
    """A valid expression that cannot be evaluated over this document (a function given the wrong type:
    `contains(null, 'x')`, `length(3)`, `sum([1, "two"])`). The message names where it is, the expression and
    JMESPath's error."""


def _search(text: str, document: dict[str, Any], where: str) -> Any:
    try:
        return _BoundedInterpreter().visit(compile_expression(text).parsed, document)
    except JMESPathError as exc:
        raise ExpressionFailed(f"{where}, `{text}`, could not be evaluated: {str(exc).splitlines()[0]}") from None
    except _TooMuchWork:
        raise ExpressionFailed(
            f"{where}, `{text}`, could not be evaluated within {MAX_EXPRESSION_VISITS} steps (docs/cron.md, Bounds)"
        ) from None


def resolve_payload(payload: Any, document: dict[str, Any], path: str = "payload") -> Any:
    """The payload with each `{"$from": expr}` replaced by the expression's value over `document` (a value the
    expression does not find is JSON null). ExpressionFailed, naming the `$from`'s path, if one cannot be
    evaluated."""
    if isinstance(payload, dict):
        if FROM_KEY in payload:
            return _search(payload[FROM_KEY], document, f"{path}.{FROM_KEY}")
        return {key: resolve_payload(value, document, f"{path}.{key}") for key, value in payload.items()}
    if isinstance(payload, list):
        return [resolve_payload(value, document, f"{path}[{index}]") for index, value in enumerate(payload)]
    return payload


def holds(condition: str, document: dict[str, Any]) -> bool:
    """A condition's value, by JMESPath's truth rules: false, null, "", [] and {} are false; 0 is true.
    ExpressionFailed if it cannot be evaluated."""
    value = _search(condition, document, "the condition")
    return not (value is None or value is False or value in ("", [], {}))
