"""GET /v1/runs/{run_id}/logs: a run's logged lines, every attempt in order, with the tenancy of GET /v1/runs/{id};
the run's attempt timeline on GET /v1/runs/{id}; echo's `payload.log`."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest

from tests.api.conftest import GLOBEX


def _triggered(api: Any, pipeline: Any, payload: dict[str, Any]) -> dict[str, Any]:
    job = api.create(payload=payload)
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    pipeline.drain()
    return run


def test_logs_answer_every_attempts_lines_in_order(api, pipeline):
    run = _triggered(api, pipeline, {"log": ["fetching", "fetched 3 rows"], "fail_attempts": 1})
    reply = api.get(f"/v1/runs/{run['id']}/logs")
    assert reply.status == 200
    body = reply.json
    assert set(body) == {"run_id", "lines", "truncated", "limit_bytes", "insights_url"}
    assert (body["run_id"], body["truncated"], body["limit_bytes"], body["insights_url"]) == (
        run["id"],
        False,
        65536,
        None,
    )
    assert [(line["attempt"], line["level"], line["message"], line["fields"]) for line in body["lines"]] == [
        (1, "INFO", "fetching", {}),
        (1, "INFO", "fetched 3 rows", {}),
        (2, "INFO", "fetching", {}),
        (2, "INFO", "fetched 3 rows", {}),
    ]
    assert all(line["at"].endswith("Z") for line in body["lines"])


def test_the_run_shows_its_attempt_timeline(api, pipeline):
    run = _triggered(api, pipeline, {"fail_attempts": 1})
    body = api.get(f"/v1/runs/{run['id']}").json
    history = body["attempt_history"]
    assert [(a["attempt"], a["outcome"]) for a in history] == [(1, "retrying"), (2, "succeeded")]
    assert set(history[0]) == {"attempt", "started_at", "ended_at", "outcome", "error"}
    assert history[0]["error"].startswith("EchoFailure: ")
    assert history[1]["error"] is None
    assert history[1]["ended_at"] == body["finished_at"]
    assert body["enqueued_at"] <= history[0]["started_at"] <= history[0]["ended_at"] <= history[1]["started_at"]


def test_a_run_that_logged_nothing_has_no_lines_not_a_404(api, pipeline):
    job = api.create()
    queued = api.post(f"/v1/jobs/{job['id']}/trigger").json
    before = api.get(f"/v1/runs/{queued['id']}/logs")  # not run yet
    assert (before.status, before.json["lines"], before.json["truncated"]) == (200, [], False)
    pipeline.drain()
    after = api.get(f"/v1/runs/{queued['id']}/logs")
    assert (after.status, after.json["lines"]) == (200, [])


def test_another_tenants_run_is_a_404_as_the_run_itself_is(api, pipeline):
    run = _triggered(api, pipeline, {"log": ["secret-ish"]})
    logs = api.get(f"/v1/runs/{run['id']}/logs", identity=GLOBEX)
    itself = api.get(f"/v1/runs/{run['id']}", identity=GLOBEX)
    assert (logs.status, itself.status) == (404, 404)
    assert logs.json["detail"] == itself.json["detail"]
    assert "secret-ish" not in logs.text


@pytest.mark.parametrize("run_id", ["j" + "0" * 25 + ".1795262400000", "not-a-run-id"])
def test_an_unknown_run_is_a_404(api, run_id):
    reply = api.get(f"/v1/runs/{run_id}/logs")
    assert reply.status == 404
    assert reply.json["detail"] == api.get(f"/v1/runs/{run_id}").json["detail"]


def test_an_over_long_run_id_is_a_422_naming_it(api):
    reply = api.get(f"/v1/runs/{'j' * 200}/logs")
    assert reply.status == 422
    assert reply.fields == ["run_id"]


@pytest.mark.parametrize(
    ("log", "field"),
    [("one line", "payload.log"), ([1], "payload.log[0]"), (["x" * 5000], "payload.log[0]")],
)
def test_echo_refuses_a_bad_payload_log_naming_it_and_writes_nothing(api, pipeline, log, field):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "x", "type": "echo", "schedule": {"rate": "1 hour"}, "payload": {"log": log}})
    assert reply.status == 422
    assert reply.fields == [field]
    assert not {"PutItem", "UpdateItem", "TransactWriteItems"} & set(pipeline.calls.by_operation())


def test_deployed_the_logs_link_to_a_logs_insights_query_for_the_run(api, pipeline, monkeypatch):
    monkeypatch.setenv("EXECUTOR_LOG_GROUPS", "/aws/lambda/tickwork-executor")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "tickwork-api")  # Lambda sets it: deployed
    run = _triggered(api, pipeline, {"log": ["hello"]})
    url = api.get(f"/v1/runs/{run['id']}/logs").json["insights_url"]
    assert url.startswith(
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:logs-insights"
    )
    # The console's own encoding: `$` for `%` around the escaped detail, `*` for `%` inside each value.
    detail = unquote(unquote(url.split("logs-insights", 1)[1].replace("$", "%"))).replace("*", "%")
    assert detail.startswith("?queryDetail=~(")
    assert f"filter run_id = '{run['id']}'" in unquote(detail)
    assert "source~(~'/aws/lambda/tickwork-executor)" in unquote(detail)
    assert "timeType~'ABSOLUTE" in detail
