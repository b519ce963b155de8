"""Logs are structured, carry the run id, and never carry payload contents; metrics go out as EMF."""

from __future__ import annotations

from datetime import timedelta

from tickwork.observability import metrics

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


def test_handlers_emit_the_documented_metrics_as_emf(pipeline, monkeypatch, capsys):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
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
