"""A job type's isolation (tickwork.jobtypes.Isolation): where its handler runs, "inline" or "function", checked by
one validator wherever it is given (the decorator, the JobType itself)."""

from __future__ import annotations

import sys

import pytest
from pydantic import BaseModel
from tickwork.jobtypes import Isolation, JobType, RunContext, job_type, registry
from tickwork.jobtypes.registry import JobTypeRegistry


class _Empty(BaseModel):
    pass


def _handler(payload: _Empty, ctx: RunContext) -> None:
    return None


def test_the_built_in_types_run_inline():
    assert {name: registry.get(name).isolation for name in ("echo", "http", "lambda")} == {
        "echo": Isolation.INLINE,
        "http": Isolation.INLINE,
        "lambda": Isolation.INLINE,
    }


def test_a_job_type_is_inline_unless_it_says_otherwise():
    assert JobType("plain", _Empty, _handler).isolation is Isolation.INLINE


@pytest.mark.parametrize("given", ["inline", "function", Isolation.FUNCTION])
def test_each_isolation_is_read_as_its_member(given):
    assert JobType("t", _Empty, _handler, isolation=given).isolation is Isolation(given)


@pytest.mark.parametrize("given", ["Function", "lambda", "", None, 1, "inline "])
def test_any_other_isolation_is_refused_naming_the_choices(given):
    with pytest.raises(ValueError, match=r"isolation is one of 'inline', 'function', not "):
        Isolation.of(given)
    with pytest.raises(ValueError, match=r"isolation is one of 'inline', 'function'"):
        JobType("t", _Empty, _handler, isolation=given)


def test_the_decorator_refuses_a_bad_isolation_when_the_module_is_imported_and_registers_nothing(monkeypatch):
    fresh = JobTypeRegistry()
    monkeypatch.setattr(sys.modules["tickwork.jobtypes.registry"], "registry", fresh)
    with pytest.raises(ValueError, match="not 'sandbox'"):
        job_type("boxed", _Empty, isolation="sandbox")(_handler)
    assert fresh.names() == []
    job_type("boxed", _Empty, isolation="function")(_handler)
    assert fresh.get("boxed").isolation is Isolation.FUNCTION


def test_tickwork_dev_lists_each_type_with_where_it_runs_when_not_inline(capsys):
    from types import SimpleNamespace

    from tickwork_local.cli import _print_banner

    import tests.isolated_jobtypes  # noqa: F401  # registers isolated-asked (function) and inline-asked

    node = SimpleNamespace(
        api_url="http://127.0.0.1:3000", concurrency={"high": 6}, parameters=lambda: {"JobTypeModules": "x"}
    )
    _print_banner(node, "http://127.0.0.1:5000", False, 60, 10, None)  # type: ignore[arg-type]
    (types,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  types")]
    assert "isolated-asked (isolation function), " in types
    assert "inline-asked, " in types
    assert "echo, " in types
