"""An executor's cold start: importing its handler, then building its wiring and clients, in a new process.

    python -m benchmarks.cold_start

A new execution environment imports `executor.app` (Lambda's init) and, on its first event, builds `Services` and
the clients a run needs (never at import). Both are measured in a fresh Python process each time, as a new
container would pay them, with the template's environment (Powertools' variables, `tracing: Active`), tracing on
(Lambda's markers set, as deployed) and off: the median of several, wall and CPU time. Bytecode is cached (one
warm-up run writes it), as it is for the SDK's packages in a deployed layer.

It also compares the two ways of building the five clients an executor may build (DynamoDB, SQS, S3, CloudWatch,
Lambda): `AwsClients`, one boto3 session for all; a session per client parses the SDK's endpoint and service data
once per client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from statistics import median
from typing import Any

from tickwork_local.aws.provision import telemetry_environment
from tickwork_local.stack.template import load_template

from benchmarks import ROOT, prepare_environment
from benchmarks.common import Stamp

SERVICES = ("dynamodb", "sqs", "s3", "cloudwatch", "lambda")
REPEATS = 7
GOAL_MS = 250  # issue #39: the executor's initialisation, imports plus clients, on these machines

_EXECUTOR_PROBE = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
import executor.app
imported = time.perf_counter(), time.process_time()
services = executor.app.services()
services.executor  # what the first event builds: the wiring and its clients
wired = time.perf_counter(), time.process_time()
print(json.dumps({
    "import_ms": (imported[0] - wall) * 1000,
    "import_cpu_ms": (imported[1] - cpu) * 1000,
    "wiring_ms": (wired[0] - imported[0]) * 1000,
    "wiring_cpu_ms": (wired[1] - imported[1]) * 1000,
    "xray_imported": "aws_xray_sdk" in sys.modules,
    "clients": sorted(services.clients._clients),
}))
"""

# Where the cold start goes: the same import and wiring, with what the executor imports first taken in turns (each
# stage's CPU time is what it adds to what came before it).
_SPLIT_PROBE = """
import json, time
marks = [("start", time.process_time())]
import boto3, boto3.dynamodb.types, botocore.client
marks.append(("the SDK's import (boto3, botocore)", time.process_time()))
import pydantic
class First(pydantic.BaseModel):
    a: int
marks.append(("pydantic's import and its first model", time.process_time()))
from aws_lambda_powertools import Logger, Metrics, Tracer
marks.append(("Powertools' logger, metrics and tracer", time.process_time()))
import executor.app
marks.append(("the rest of `executor.app`: Tickwork's modules and models (and X-Ray, tracing on)", time.process_time()))
executor.app.services().executor
marks.append(("the first event's wiring: its three clients", time.process_time()))
print(json.dumps({b[0]: (b[1] - a[1]) * 1000 for a, b in zip(marks, marks[1:])}))
"""

_CLIENTS_PROBE = """
import json, sys, time
started = time.perf_counter()
import boto3
from tickwork.aws.clients import AwsClients
imported = time.perf_counter()
services = json.loads(sys.argv[2])
if sys.argv[1] == "one session (AwsClients)":
    clients = AwsClients()
    for service in services:
        clients.client(service)
else:
    for service in services:
        boto3.session.Session().client(service)
print(json.dumps({"import_ms": (imported - started) * 1000, "clients_ms": (time.perf_counter() - imported) * 1000}))
"""

MODES = ("one session (AwsClients)", "a session per client")

_QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/tickwork-"

# The executor's settings as the template gives them (resource names stand in for the stack's).
_EXECUTOR_SETTINGS = {
    "TABLE_NAME": "tickwork-jobs",
    "RESULTS_BUCKET": "tickwork-results",
    "AUDIT_BUCKET": "tickwork-audit",
    **{f"QUEUE_URL_{band}": f"{_QUEUE}{band.lower()}" for band in ("HIGH", "NORMAL", "LOW")},
    **{f"DLQ_URL_{band}": f"{_QUEUE}{band.lower()}-dlq" for band in ("HIGH", "NORMAL", "LOW")},
    "JOB_SANDBOX_FUNCTION": "tickwork-job-sandbox",
    "CURSOR_SECRET": "x" * 40,
    "JOB_TYPE_MODULES": "",
}


def _environment(*, tracing: bool, bytecode: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("POWERTOOLS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(telemetry_environment(load_template()))  # the template's: tracing on, metrics on
    env.update(_EXECUTOR_SETTINGS)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(str(ROOT / folder) for folder in ("shared", "functions")),
            "PYTHONPYCACHEPREFIX": bytecode,
            "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
        }
    )
    if tracing:
        env["LAMBDA_TASK_ROOT"] = str(ROOT / "functions/executor")  # Lambda's marker: the Tracer stays on
    else:
        env.pop("LAMBDA_TASK_ROOT", None)
    return env


def _probe(code: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _medians(samples: list[dict[str, Any]]) -> dict[str, Any]:
    figures = {key: round(median(s[key] for s in samples), 1) for key in samples[0] if key.endswith("_ms")}
    return {**samples[0], **figures}


# Every pydantic model's validator built on its first use instead of at import: not how Tickwork runs (the first
# event would build those it uses), but the most that building fewer models at import could save.
_EVERY_MODEL_DEFERRED = "import pydantic._internal._config as c; c.config_defaults['defer_build'] = True\n"


def measure_executor(*, tracing: bool, repeats: int = REPEATS, models_deferred: bool = False) -> dict[str, Any]:
    code = _EVERY_MODEL_DEFERRED + _EXECUTOR_PROBE if models_deferred else _EXECUTOR_PROBE
    with tempfile.TemporaryDirectory(prefix="tickwork-bytecode-") as bytecode:
        env = _environment(tracing=tracing, bytecode=bytecode)
        _probe(code, env)  # writes the bytecode
        figures = _medians([_probe(code, env) for _ in range(repeats)])
    figures["total_ms"] = round(figures["import_ms"] + figures["wiring_ms"], 1)
    figures["total_cpu_ms"] = round(figures["import_cpu_ms"] + figures["wiring_cpu_ms"], 1)
    return figures


def measure_split(*, tracing: bool, repeats: int = REPEATS) -> dict[str, float]:
    """Each stage's CPU time, in ms: the median of `repeats` new processes."""
    with tempfile.TemporaryDirectory(prefix="tickwork-bytecode-") as bytecode:
        env = _environment(tracing=tracing, bytecode=bytecode)
        _probe(_SPLIT_PROBE, env)  # writes the bytecode
        samples = [_probe(_SPLIT_PROBE, env) for _ in range(repeats)]
    return {stage: round(median(s[stage] for s in samples), 1) for stage in samples[0]}


def measure_clients(mode: str, repeats: int = REPEATS) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    samples = [_probe(_CLIENTS_PROBE, env, mode, json.dumps(SERVICES)) for _ in range(repeats)]
    return {key: round(median(s[key] for s in samples), 1) for key in ("import_ms", "clients_ms")}


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min {five:.2f})"


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    repeats = 3 if quick else REPEATS
    load_before = _load()
    result = {
        "stamp": stamp.__dict__,
        "repeats": repeats,
        "tracing_off": measure_executor(tracing=False, repeats=repeats),
        "tracing_off_models_deferred": measure_executor(tracing=False, repeats=repeats, models_deferred=True),
        "tracing_on": measure_executor(tracing=True, repeats=repeats),
        "clients": {mode: measure_clients(mode, repeats) for mode in MODES},
        "split": {
            key: measure_split(tracing=key == "tracing_on", repeats=repeats) for key in ("tracing_on", "tracing_off")
        },
    }
    return {**result, "load": f"{load_before} before, {_load()} after"}


def _goal(ms: float, *, bold: bool = True) -> str:
    return "met" if ms <= GOAL_MS else "**missed**" if bold else "missed"


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    rows = []
    for key, label in (("tracing_on", "tracing on (the template's default)"), ("tracing_off", "tracing off")):
        f = result[key]
        rows.append(
            f"| {label} | {f['import_ms']:.0f} ms ({f['import_cpu_ms']:.0f}) | {f['wiring_ms']:.0f} ms"
            f" ({f['wiring_cpu_ms']:.0f}) | **{f['total_ms']:.0f} ms** ({f['total_cpu_ms']:.0f}) |"
            f" {', '.join(f['clients'])} | {'yes' if f['xray_imported'] else 'no'} | {_goal(f['total_ms'])} |"
        )
    one, per = (result["clients"][mode] for mode in MODES)
    return "\n".join(
        [
            "## 11. Executor cold start",
            "",
            f"Measured by {stamp.line()}; load average {result['load']}.",
            "",
            f"A new Python process imports `executor.app` (Lambda's init), then builds what its first event needs"
            f" (`services().executor`: the wiring and its clients), with the template's environment; the median of"
            f" {result['repeats']} processes, wall time (CPU time in brackets), bytecode cached. Goal (issue #39):"
            f" ≤ {GOAL_MS} ms on this machine, imports plus clients.",
            "",
            "| | import | first event's wiring | cold start | clients built | X-Ray SDK imported | goal |",
            "|---|---:|---:|---:|---|---|---|",
            *rows,
            "",
            f"Lambda's 512 MB gives about 0.29 of a vCPU, so a deployed cold start takes several times these."
            f" Building the five clients an executor may build ({', '.join(SERVICES)}): {one['clients_ms']:.0f} ms"
            f" from one session (`AwsClients`), {per['clients_ms']:.0f} ms with a session per client.",
            *_split(result),
            *_why_missed(result),
        ]
    )


def _split(result: dict[str, Any]) -> list[str]:
    """Where the CPU time goes, stage by stage (absent from results measured before the stages were)."""
    if "split" not in result:
        return []
    on, off = result["split"]["tracing_on"], result["split"]["tracing_off"]
    return [
        "",
        "Where the CPU time goes, stage by stage, in a new process each (the median of as many; what a stage adds to"
        " the ones before it):",
        "",
        "| stage | tracing on | tracing off |",
        "|---|---:|---:|",
        *(f"| {stage} | {on[stage]:.0f} ms | {off[stage]:.0f} ms |" for stage in on),
        f"| **all** | **{sum(on.values()):.0f} ms** | **{sum(off.values()):.0f} ms** |",
    ]


def _why_missed(result: dict[str, Any]) -> list[str]:
    if all(result[key]["total_ms"] <= GOAL_MS for key in ("tracing_on", "tracing_off")):
        return []
    lines = [
        "",
        "Why missed: the executor's three clients (DynamoDB, S3, SQS) are each used by every run in the default"
        " configuration (the result goes to S3 unless `InlineResultMaxBytes` is set), so none can be left out, and"
        " they are built on the first event, not at import. The composition root (`tickwork.services`) imports the"
        " API's and the tick's modules only where it builds them, an executor reads its SQS records with a model of"
        " its own (`tickwork.model.sqs_records`) rather than Powertools' batch utility and parser, which loaded the"
        " models of every event source, and the X-Ray SDK is imported only with tracing on"
        " (tests/unit/test_executor_cold_start.py checks all three).",
    ]
    split = result.get("split", {}).get("tracing_off")
    if split:
        sdk, first_model, *_, wiring = split.values()
        floor = sdk + first_model + wiring
        lines += [
            "",
            f"What is left is mostly not Tickwork's: the SDK's import ({sdk:.0f} ms of CPU), pydantic's import and"
            f" first model ({first_model:.0f} ms) and building the three clients ({wiring:.0f} ms) come to"
            f" {floor:.0f} ms, {'more than' if floor > GOAL_MS else 'most of'} the goal before any of Tickwork's"
            " code: with boto3 and pydantic in CPython the goal is out of reach on this machine. Tickwork's own"
            " share is its modules and their pydantic models, built at import: `tickwork.store` imports every store"
            " module, and with them the models of jobs, runs, workflows, freezes, calendars and the audit trail, so"
            " an executor builds about 65 models, of which a run uses some.",
        ]
    deferred = result.get("tracing_off_models_deferred")
    if split and deferred:
        lines[-1] += (
            " Splitting the store so that an executor builds only those could save at most what building none at"
            " import saves: with every model's validator deferred to its first use (pydantic's `defer_build`, set"
            f" for all), the cold start with tracing off takes {deferred['total_cpu_ms']:.0f} ms of CPU, against"
            f" {result['tracing_off']['total_cpu_ms']:.0f} ms as it is."
        )
    return lines


def console(result: dict[str, Any]) -> str:
    on, off = result["tracing_on"], result["tracing_off"]
    return (
        f"[11] cold start: executor import + first wiring {on['total_ms']:.0f} ms tracing on"
        f" ({_goal(on['total_ms'], bold=False)}), {off['total_ms']:.0f} ms tracing off"
        f" ({_goal(off['total_ms'], bold=False)}); goal"
        f" ≤ {GOAL_MS} ms; load {result['load']}"
    )


def main() -> None:
    prepare_environment()
    stamp = Stamp.now("python -m benchmarks.cold_start")
    print(render(run(stamp, quick=False)))


if __name__ == "__main__":
    main()
