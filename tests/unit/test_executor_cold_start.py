"""What an executor's cold start does not pay for, counted rather than timed (benchmarks/cold_start.py times it):
importing its handler, in a new process as in a new execution environment, builds no AWS client (they are built on
the first event, after moto patches in tests), loads neither Powertools' batch utility nor its parser and, with
tracing off, does not import the X-Ray SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, sys
import boto3.session
built = []
client = boto3.session.Session.client
def counted(self, *args, **kwargs):
    built.append(args[0] if args else kwargs.get("service_name"))
    return client(self, *args, **kwargs)
boto3.session.Session.client = counted
import executor.app
imported = {"clients": list(built), "xray": sorted(m for m in sys.modules if m.startswith("aws_xray_sdk"))[:3]}
batch_utility = ("aws_lambda_powertools.utilities.parser", "aws_lambda_powertools.utilities.batch")
imported["batch_utility"] = sorted(m for m in sys.modules if m.startswith(batch_utility))[:3]
rooms = ("tickwork.control", "tickwork.tick")  # the API's and the tick's: an executor uses neither
imported["rooms"] = sorted(m for m in sys.modules if m.startswith(rooms))
executor.app.services().executor  # what the first event builds: the wiring and its clients
imported["batch_utility_after_wiring"] = sorted(m for m in sys.modules if m.startswith(batch_utility))[:3]
imported["rooms_after_wiring"] = sorted(m for m in sys.modules if m.startswith(rooms))
print(json.dumps(imported))
"""

# The settings an executor reads (the values are never used: nothing is called).
_QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/tickwork-"
_SETTINGS = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "tickwork-jobs",
    "RESULTS_BUCKET": "tickwork-results",
    **{f"QUEUE_URL_{band}": f"{_QUEUE}{band.lower()}" for band in ("HIGH", "NORMAL", "LOW")},
    **{f"DLQ_URL_{band}": f"{_QUEUE}{band.lower()}-dlq" for band in ("HIGH", "NORMAL", "LOW")},
    "CURSOR_SECRET": "x" * 40,
    "JOB_TYPE_MODULES": "",
}


def _import_the_executor(*, tracing: bool) -> dict[str, list[str]]:
    """Import the executor's handler in a new process, count the clients built, then build its first event's
    wiring."""
    env = {name: value for name, value in os.environ.items() if name not in ("LAMBDA_TASK_ROOT", "_X_AMZN_TRACE_ID")}
    env.update(_SETTINGS)
    env["PYTHONPATH"] = os.pathsep.join(str(ROOT / folder) for folder in ("shared", "functions"))
    env["POWERTOOLS_TRACE_DISABLED"] = "false" if tracing else "true"
    if tracing:
        env["LAMBDA_TASK_ROOT"] = str(ROOT / "functions" / "executor")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, cwd=ROOT, env=env, timeout=120
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_executor_with_tracing_off_imports_no_xray_sdk_and_builds_no_client() -> None:
    imported = _import_the_executor(tracing=False)

    assert (imported["clients"], imported["xray"]) == ([], [])


def test_an_executors_import_and_first_wiring_load_none_of_the_apis_or_the_ticks_modules() -> None:
    imported = _import_the_executor(tracing=False)

    assert imported["rooms"] == []
    assert imported["rooms_after_wiring"] == []


@pytest.mark.parametrize("tracing", [False, True])
def test_an_executor_loads_neither_powertools_batch_utility_nor_its_parser(tracing: bool) -> None:
    """Its SQS records are read by its own model (tickwork.model.sqs_records): the parser's models of every event
    source, which Powertools' batch utility loads with it, were about a third of the import."""
    imported = _import_the_executor(tracing=tracing)

    assert imported["batch_utility"] == []
    assert imported["batch_utility_after_wiring"] == []


def test_importing_the_executor_with_tracing_on_builds_no_client_and_traces_with_xray() -> None:
    imported = _import_the_executor(tracing=True)

    assert imported["clients"] == []
    assert imported["xray"]  # the Tracer is on: it patched the SDK with X-Ray's recorder
