"""Job types of a user's own modules (JOB_TYPE_MODULES, the template's JobTypeModules): the settings read them, the
wiring imports them at start-up, and a module that fails to import stops the function with an error naming it.
The worked example, examples/job-types/layer/acme_jobs (docs/job-types.md), is imported from its plain folder."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import ValidationError
from tickwork.control.job_factory import JobFactory
from tickwork.jobtypes import JobTypeModuleError, RunContext, registry
from tickwork.model.clock import FakeClock
from tickwork.model.errors import InvalidInput
from tickwork.services import Services
from tickwork.settings import Settings, load_settings
from tickwork_local.cli import _job_types, _job_types_paths
from tickwork_local.runtime.apigateway import http_api_event
from tickwork_local.runtime.lambda_runtime import (
    LocalLambdaContext,
    function_config,
    load_handler_module,
    scheduled_event,
    sqs_event,
)
from tickwork_local.stack.template import REPO_ROOT, load_template

EXAMPLE_LAYER = REPO_ROOT / "examples" / "job-types" / "layer"  # the layer's contents: acme_jobs/
INVOICE = json.loads((REPO_ROOT / "examples" / "job-types" / "invoice.json").read_text())  # its sample payload
BASE = {
    "TABLE_NAME": "t-table",
    "RESULTS_BUCKET": "bucket",
    **{f"QUEUE_URL_{b}": f"http://q/{b.lower()}" for b in ("HIGH", "NORMAL", "LOW")},
    **{f"DLQ_URL_{b}": f"http://q/{b.lower()}-dlq" for b in ("HIGH", "NORMAL", "LOW")},
}


def _settings(modules: str) -> Settings:
    return Settings.from_env({**BASE, "JOB_TYPE_MODULES": modules})


def _module(folder: Path, body: str) -> str:
    """A module of its own name in `folder` (on sys.path), so no other test has imported it."""
    name = f"user_jobs_{uuid.uuid4().hex[:12]}"
    (folder / f"{name}.py").write_text(body)
    return name


def _context(clock: FakeClock) -> RunContext:
    return RunContext("j1.1", "j1", "default", 1, clock.now() + timedelta(seconds=60), clock)


# ---------------------------------------------------------------- settings


def test_settings_read_the_job_type_modules() -> None:
    assert _settings("acme_jobs, acme.billing.jobs").job_type_modules == ("acme_jobs", "acme.billing.jobs")
    assert _settings("").job_type_modules == ()
    assert Settings.from_env(BASE).job_type_modules == ()


@pytest.mark.parametrize("modules", ["acme-jobs", "acme_jobs,2fast", "acme/jobs.py", "acme..jobs"])
def test_a_job_type_module_that_is_no_module_name_names_the_variable(modules: str) -> None:
    with pytest.raises(ValidationError) as info:
        _settings(modules)
    assert info.value.errors()[0]["loc"][0] == "JOB_TYPE_MODULES"


# ---------------------------------------------------------------- start-up


def test_the_wiring_imports_the_job_type_modules_at_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = _module(
        tmp_path,
        "from pydantic import BaseModel\n"
        "from tickwork.jobtypes import job_type\n\n\n"
        "class Greeting(BaseModel):\n    who: str\n\n\n"
        "@job_type(__name__, Greeting)\n"
        "def greet(payload, ctx):\n    return {'hello': payload.who}\n",
    )
    assert name not in registry

    Services(settings=_settings(name))

    assert name in registry
    assert registry.get(name).handler(registry.get(name).parse({"who": "you"}), None) == {"hello": "you"}
    Services(settings=_settings(name))  # a second wiring in the process: imported once, registered once


def test_the_example_module_loads_from_its_folder_and_totals_an_invoice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_LAYER))
    Services(settings=_settings("acme_jobs"))
    kind = registry.get("invoice_total")

    result = kind.handler(kind.parse(INVOICE), _context(FakeClock()))

    assert result == {
        "customer": "Initech",
        "currency": "EUR",
        "lines": 2,
        "subtotal": "52.00",
        "tax": "10.40",
        "total": "62.40",
    }
    json.dumps(result)  # the result is stored as JSON


def test_the_example_payload_is_checked_at_create_naming_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_LAYER))
    Services(settings=_settings("acme_jobs"))
    bad = {**INVOICE, "lines": [{"description": "Staplers", "quantity": 0, "unit_price": "7.25"}]}

    with pytest.raises(InvalidInput) as info:
        JobFactory(shards=2).check_payload("default", "invoice_total", bad)

    assert [e.field for e in info.value.errors] == ["payload.lines[0].quantity"]


# ---------------------------------------------------------------- a module that fails


@pytest.mark.parametrize(
    ("body", "cause"),
    [
        (None, "ModuleNotFoundError: No module named '{name}'"),
        ("import acme_dependency_not_installed\n", "No module named 'acme_dependency_not_installed'"),
        ("raise RuntimeError('no config')\n", "RuntimeError: no config"),
        (  # a name the built-in types have
            "from pydantic import BaseModel\nfrom tickwork.jobtypes import job_type\n\n"
            "@job_type('echo', BaseModel)\ndef echo(payload, ctx):\n    return {}\n",
            "job type 'echo' is already registered",
        ),
    ],
    ids=["missing", "its-dependency-missing", "raises", "duplicate-type"],
)
def test_a_job_type_module_that_fails_to_import_stops_the_start_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str | None, cause: str
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE_LAYER))  # acme_jobs, listed first, imports: the next one is named
    name = _module(tmp_path, body) if body is not None else "acme_jobs_not_there"

    with pytest.raises(JobTypeModuleError) as info:
        Services(settings=_settings(f"acme_jobs,{name}" if body is not None else name))

    message = str(info.value)
    assert f"job type module {name!r} (JOB_TYPE_MODULES) failed to import" in message
    assert cause.format(name=name) in message


def _event(function: str) -> Any:
    if function == "ApiFunction":
        return http_api_event(method="GET", target="/v1/openapi.json", headers=[], body=b"")
    if function == "TickFunction":
        return scheduled_event(FakeClock().now(), "arn:aws:events:us-east-1:123456789012:rule/tick")
    return sqs_event([{"MessageId": "m1", "ReceiptHandle": "r1", "Body": "{}"}], BASE["QUEUE_URL_HIGH"])


@pytest.mark.parametrize("function", ["ApiFunction", "TickFunction", "ExecutorFunction", "DispatchFunction"])
def test_each_function_fails_its_first_invocation_naming_a_module_that_does_not_import(
    monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    """Deployed, the function builds its wiring from its environment on its first invocation: a module that does not
    import fails that invocation (and each after it), never a run nor a create quietly."""
    for name, value in {**BASE, "JOB_TYPE_MODULES": "acme_jobs_not_there", "API_AUTH_MODE": "local"}.items():
        monkeypatch.setenv(name, value)
    load_settings.cache_clear()
    module = load_handler_module(function_config(load_template(), function))  # a fresh execution environment
    try:
        with pytest.raises(JobTypeModuleError, match="'acme_jobs_not_there'"):
            module.handler(_event(function), LocalLambdaContext(function))
    finally:
        load_settings.cache_clear()


# ---------------------------------------------------------------- tickwork dev --job-types


def test_dev_job_types_are_the_template_parameter() -> None:
    assert _job_types("acme_jobs", {"LogLevel": "DEBUG"}) == {"LogLevel": "DEBUG", "JobTypeModules": "acme_jobs"}
    assert _job_types(None, {"JobTypeModules": "acme_jobs"}) == {"JobTypeModules": "acme_jobs"}
    assert _job_types_paths([str(EXAMPLE_LAYER)]) == [str(EXAMPLE_LAYER)]


def test_dev_refuses_job_types_given_twice(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit):
        _job_types("acme_jobs", {"JobTypeModules": "other_jobs"})
    assert "--job-types or --parameter JobTypeModules" in capsys.readouterr().err


def test_dev_refuses_a_job_types_path_that_is_no_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit):
        _job_types_paths([str(tmp_path / "missing")])
    assert f"--job-types-path: no folder {tmp_path / 'missing'}" in capsys.readouterr().err
