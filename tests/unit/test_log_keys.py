"""No structured log key is one a log record keeps for itself.

`logging` refuses an `extra` key that is a LogRecord attribute ("created", "name", "msg", ...): the call raises
KeyError, but only when its level is on, so a DEBUG or INFO line breaks only where that level is deployed. Powertools
drops the keys its formatter owns ("level", "location", "timestamp") from the line. Its Logger takes a logging call's
other keyword arguments as `extra` too, and `append_keys` adds keys to every line. The suite runs at the template's
level (tests/conftest.py), which catches the lines it executes; this reads every logging call in the source, executed
or not.
"""

from __future__ import annotations

import ast
import dataclasses
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aws_lambda_powertools.logging.formatter import RESERVED_LOG_ATTRS
from tickwork.tick.report import TickReport

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("shared", "functions", "infrastructure")

RESERVED = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"} | frozenset(RESERVED_LOG_ATTRS)
LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
LOGGING_PARAMETERS = {"exc_info", "stack_info", "stacklevel", "extra"}
APPEND_METHODS = {"append_keys", "thread_safe_append_keys", "append_context_keys"}

# Extras whose keys are not written out where they are logged, by file and expression: where their keys come from.
KEYS_ELSEWHERE: dict[tuple[str, str], Callable[[], set[str]]] = {
    (
        "shared/tickwork/tick/dispatch.py",
        "{k: v for k, v in report.__dict__.items() if k != 'dispatched_run_ids'}",
    ): lambda: {f.name for f in dataclasses.fields(TickReport)},
}


def _literal_keys(node: ast.expr) -> set[str] | None:
    """The keys of a dict display or a `dict(...)` of keywords; None when they cannot be read here."""
    if isinstance(node, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in node.keys]
        return None if None in keys else set(keys)  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        names = [k.arg for k in node.keywords]
        return None if None in names else set(names)  # type: ignore[arg-type]
    return None


def _keyword_keys(call: ast.Call, skip: set[str]) -> set[str] | None:
    names = [k.arg for k in call.keywords if k.arg not in skip]
    return None if None in names else set(names)  # type: ignore[arg-type]


def logged_keys(source: str, path: str) -> Iterator[tuple[int, set[str] | None, str]]:
    """(line, keys or None if unreadable, the expression) for every structured logging call in `source`."""
    for call in ast.walk(ast.parse(source)):
        if not isinstance(call, ast.Call):
            continue
        for keyword in call.keywords:
            if keyword.arg == "extra" and not isinstance(keyword.value, ast.Constant):  # ConfigDict(extra="forbid")
                text = ast.unparse(keyword.value)
                keys = _literal_keys(keyword.value)
                if keys is None and (path, text) in KEYS_ELSEWHERE:
                    keys = KEYS_ELSEWHERE[(path, text)]()
                yield call.lineno, keys, text
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        if func.attr in LOG_METHODS and isinstance(func.value, ast.Name) and func.value.id == "logger":
            # Powertools' Logger: a logging call's other keyword arguments are extra keys.
            if any(k.arg not in LOGGING_PARAMETERS for k in call.keywords):
                yield call.lineno, _keyword_keys(call, LOGGING_PARAMETERS), ast.unparse(call)
        elif func.attr in APPEND_METHODS:
            yield call.lineno, _keyword_keys(call, set()), ast.unparse(call)


def reserved_keys_logged() -> list[str]:
    found = []
    for top in SOURCES:
        for file in sorted((ROOT / top).rglob("*.py")):
            path = file.relative_to(ROOT).as_posix()
            for line, keys, text in logged_keys(file.read_text(encoding="utf-8"), path):
                if keys is None:
                    found.append(f"{path}:{line}: keys not readable here (write them out): {text}")
                elif keys & RESERVED:
                    found.append(f"{path}:{line}: {sorted(keys & RESERVED)} in {text}")
    return found


def test_no_structured_log_key_is_one_a_log_record_keeps_for_itself():
    assert reserved_keys_logged() == []


def test_every_extra_read_from_elsewhere_is_still_logged_so():
    sources = {path: (ROOT / path).read_text(encoding="utf-8") for path, _ in KEYS_ELSEWHERE}
    seen = {(path, text) for path, source in sources.items() for _, _, text in logged_keys(source, path)}
    assert set(KEYS_ELSEWHERE) <= seen


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        ('logger.info("backfill", extra={"job_id": j, "created": 2})', {"job_id", "created"}),
        ('log.debug("x", extra=dict(name=n))', {"name"}),
        ('logger.warning("x", exc_info=True, probe_at=p)', {"probe_at"}),
        ("logger.append_keys(level=1)", {"level"}),
        ('logger.info("x", extra=fields)', None),
        ('logger.info("x", extra={**fields})', None),
        ('logger.error("x", **fields)', None),
        ('ConfigDict(extra="forbid")', "nothing"),
    ],
)
def test_the_check_reads_each_way_a_key_is_logged(source, keys):
    found = [found for _, found, _ in logged_keys(source, "example.py")]
    assert found == ([] if keys == "nothing" else [keys])


def test_the_reserved_keys_are_those_logging_refuses_and_powertools_drops():
    with pytest.raises(KeyError, match="created"):
        logging.getLogger("x").makeRecord("x", logging.INFO, "f", 1, "m", (), None, extra={"created": 1})
    assert {"created", "name", "msg", "message", "asctime", "level", "location", "timestamp"} <= RESERVED
    assert not {"job_id", "run_id", "runs_created", "tenant"} & RESERVED
