"""Logs are structured, carry the run id, and never carry payload contents; metrics go out as EMF."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from tickwork.observability import logger, metrics, tracer
from tickwork.settings import Settings
from tickwork_local.stack.template import load_template

from tests.conftest import json_lines
from tests.harness import START

SECRET = "hunter2-do-not-log"


def test_run_logs_carry_run_and_job_ids_and_never_the_payload(pipeline, info_logs):
    job = pipeline.create_job(
        schedule={"at": START + timedelta(seconds=300)}, payload={"password": SECRET}, retry={"max_attempts": 2}
    )
    pipeline.clock.advance(300)
    pipeline.tick()
    pipeline.drain()
    output = info_logs.getvalue()
    assert "job created" in output
    assert SECRET not in output
    records = json_lines(output)
    run_lines = [r for r in records if r.get("message") in ("run started", "run succeeded")]
    assert {r["message"] for r in run_lines} == {"run started", "run succeeded"}
    assert all(r["job_id"] == job.id and r["run_id"].startswith(job.id) for r in run_lines)
    assert all(r["level"] == "INFO" and r["service"] == "tickwork" for r in run_lines)


def test_handlers_emit_the_documented_metrics_as_emf(pipeline, capsys):
    pipeline.create_job(schedule={"at": START + timedelta(seconds=300)}, payload={"fail_attempts": 1})
    pipeline.clock.advance(300)
    pipeline.tick()
    pipeline.drain()
    metrics.clear_metrics()
    emitted: set[str] = set()
    for record in json_lines(capsys.readouterr().out):
        aws = record.get("_aws")
        if aws:
            assert aws["CloudWatchMetrics"][0]["Namespace"] == "Tickwork"
            emitted |= {m["Name"] for m in aws["CloudWatchMetrics"][0]["Metrics"]}
    assert {
        "RunsDispatched",
        "DispatchLagMs",
        "TickDurationMs",
        "StartLatenessMs",
        "RunDurationMs",
        "RunsRetried",
        "RunsSucceeded",
    } <= emitted


def _defaults(variables: dict[str, Any], parameters: dict[str, Any]) -> dict[str, str]:
    """The variables that are literals or parameter references, at the parameters' defaults."""
    out = {}
    for name, value in variables.items():
        if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in parameters:
            out[name] = str(parameters[value["Ref"]]["Default"])
        elif not isinstance(value, dict):
            out[name] = str(value)
    return out


def test_the_suite_s_telemetry_is_the_template_s_defaults():
    template = load_template()
    function = template["Globals"]["Function"]
    deployed = _defaults(function["Environment"]["Variables"], template["Parameters"])
    powertools = {name: value for name, value in deployed.items() if name.startswith("POWERTOOLS_")}
    assert powertools["POWERTOOLS_LOG_LEVEL"] == template["Parameters"]["LogLevel"]["Default"]
    assert {name: os.environ.get(name) for name in powertools} == powertools
    assert logging.getLevelName(logger.log_level) == powertools["POWERTOOLS_LOG_LEVEL"]
    assert (logger.service, metrics.namespace) == (
        powertools["POWERTOOLS_SERVICE_NAME"],
        powertools["POWERTOOLS_METRICS_NAMESPACE"],
    )
    assert not is_metrics_disabled()  # the template turns no metrics off
    assert tracer.disabled is (function.get("Tracing") != "Active")
    # One process hosts every function here: none may set its own.
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            own = resource["Properties"].get("Environment", {}).get("Variables", {})
            assert "Tracing" not in resource["Properties"], logical_id
            assert not [name for name in own if name.startswith("POWERTOOLS_")], logical_id


def test_the_pipeline_s_settings_are_the_template_s_defaults(pipeline):
    deployed = Settings.from_env(pipeline.resources.environment("ExecutorFunction")).model_dump()
    used = pipeline.services.settings.model_dump()
    # due_shards: 4, not 8: a tick queries each shard, and moto answers a query by walking the whole table.
    assert {name for name in used if used[name] != deployed[name]} == {"due_shards"}


def test_handlers_and_their_aws_calls_are_traced_as_deployed(pipeline, traces):
    pipeline.create_job(schedule={"at": START + timedelta(seconds=300)})
    pipeline.clock.advance(300)
    pipeline.tick()
    pipeline.drain()
    documents = traces.documents()
    assert {d["trace_id"] for d in documents} == {os.environ["_X_AMZN_TRACE_ID"].split(";")[0].removeprefix("Root=")}
    assert [d["name"] for d in documents if d["namespace"] == "local"] == ["## handler", "## handler"]  # tick, executor
    calls = {(d["name"], d["aws"]["operation"]) for d in documents if d["namespace"] == "aws"}
    assert {("dynamodb", "PutItem"), ("sqs", "SendMessageBatch"), ("s3", "PutObject")} <= calls
