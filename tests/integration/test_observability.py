"""Logs are structured, carry the run id, and never carry payload contents; metrics go out as EMF."""

from __future__ import annotations

import io
import json
import logging
from datetime import timedelta

import pytest
from tickwork.observability import logger, metrics

from tests.harness import START

SECRET = "hunter2-do-not-log"


@pytest.fixture
def info_logs():
    """The service's log stream at INFO, through Powertools' own JSON formatter."""
    previous = logger.log_level
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    logger.setLevel("INFO")
    yield stream
    logger.removeHandler(handler)
    logger.setLevel(previous)


def _lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


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
    records = _lines(output)
    run_lines = [r for r in records if r.get("message") in ("run started", "run succeeded")]
    assert {r["message"] for r in run_lines} == {"run started", "run succeeded"}
    assert all(r["job_id"] == job.id and r["run_id"].startswith(job.id) for r in run_lines)
    assert all(r["level"] == "INFO" and r["service"] == "tickwork" for r in run_lines)


def test_handlers_emit_the_documented_metrics_as_emf(pipeline, monkeypatch, capsys):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    pipeline.create_job(schedule={"at": START + timedelta(seconds=300)}, payload={"fail_attempts": 1})
    pipeline.clock.advance(300)
    pipeline.tick()
    pipeline.drain()
    metrics.clear_metrics()
    emitted: set[str] = set()
    for record in _lines(capsys.readouterr().out):
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
