"""The local runtime's pure parts: what it reads from the template, the events it builds, the answers it
reads back, its arithmetic and its lines. No AWS, no threads."""

from __future__ import annotations

import base64
import io
import json
import socket
import time
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from tickwork.model.run import Run, RunError, RunResult
from tickwork.model.states import RunStatus, SkipReason
from tickwork.store import Finished
from tickwork_local.aws.endpoint import PortInUse, check_port_free
from tickwork_local.runtime.apigateway import docs_page, http_api_event, http_api_response
from tickwork_local.runtime.lambda_runtime import LocalLambdaContext, function_config, scheduled_event, sqs_event
from tickwork_local.runtime.node import apportion
from tickwork_local.runtime.observe import ObservedResults, ObservedStore, RunLog, format_run_line, format_tick_line
from tickwork_local.runtime.poller import failed_ids_from
from tickwork_local.runtime.ticker import next_slot
from tickwork_local.stack.template import load_template

TEMPLATE = load_template()
PARAMETERS = {"HighConcurrency": "50", "NormalConcurrency": "20", "LowConcurrency": "5"}


# ---------------------------------------------------------------- the template's functions


def test_function_settings_come_from_the_template_with_globals_merged():
    executor = function_config(TEMPLATE, "ExecutorFunction", PARAMETERS)
    tick = function_config(TEMPLATE, "TickFunction", PARAMETERS)
    api = function_config(TEMPLATE, "ApiFunction", PARAMETERS)

    assert executor.timeout_seconds == TEMPLATE["Parameters"]["ExecutorTimeoutSeconds"]["Default"]
    short = function_config(TEMPLATE, "ExecutorFunction", {**PARAMETERS, "ExecutorTimeoutSeconds": "10"})
    assert short.timeout_seconds == 10  # a parameter set locally (tickwork dev --parameter)
    assert tick.timeout_seconds == TEMPLATE["Resources"]["TickFunction"]["Properties"]["Timeout"]
    assert api.timeout_seconds == TEMPLATE["Resources"]["ApiFunction"]["Properties"]["Timeout"]
    assert executor.memory_mb == TEMPLATE["Resources"]["ExecutorFunction"]["Properties"]["MemorySize"]
    assert executor.module_file.name == "app.py"
    assert executor.module_file.parent.name == "executor"
    assert executor.module_file.is_file()
    assert executor.handler_name == "handler"


def test_event_sources_are_the_executor_sqs_events_with_batch_size_and_concurrency_by_band():
    sources = {
        s.band: s for s in function_config(TEMPLATE, "ExecutorFunction", PARAMETERS).sqs_event_sources(PARAMETERS)
    }
    events = TEMPLATE["Resources"]["ExecutorFunction"]["Properties"]["Events"]

    assert set(sources) == {"high", "normal", "low"}
    assert {b: s.maximum_concurrency for b, s in sources.items()} == {"high": 50, "normal": 20, "low": 5}
    assert {s.batch_size for s in sources.values()} == {events["HighBand"]["Properties"]["BatchSize"]}
    assert all(s.report_batch_item_failures and s.enabled for s in sources.values())
    assert sources["high"].queue_logical_id == "HighQueue"


def test_concurrency_follows_the_template_weights_scaled_to_the_workers():
    weights = {"high": 50, "normal": 20, "low": 5}
    assert apportion(weights, 10) == {"high": 6, "normal": 2, "low": 2}
    assert apportion(weights, 24) == {"high": 16, "normal": 6, "low": 2}
    shares = apportion(weights, 75)
    assert shares == weights
    assert sum(apportion(weights, 40).values()) == 40
    with pytest.raises(ValueError, match="at least 6"):
        apportion(weights, 5)


def test_no_band_gets_more_than_its_template_ceiling():
    assert apportion({"high": 3, "normal": 2, "low": 2}, 100) == {"high": 3, "normal": 2, "low": 2}


# ---------------------------------------------------------------- Lambda's objects and events


def test_context_counts_down_from_the_function_timeout():
    # Started 901 s ago (not "at monotonic 0": a machine up for less than 900 s has a small monotonic clock).
    ctx = LocalLambdaContext("fn", timeout_seconds=900, _started=time.monotonic() - 901)
    assert ctx.get_remaining_time_in_millis() == 0
    fresh = LocalLambdaContext("fn", timeout_seconds=30)
    assert 29_000 < fresh.get_remaining_time_in_millis() <= 30_000
    assert fresh.invoked_function_arn.endswith(":function:fn")


def test_scheduled_event_is_eventbridge_shaped_with_time_to_the_second():
    event = scheduled_event(datetime(2026, 11, 21, 12, 0, 0, 500_000, tzinfo=UTC), "arn:aws:events:r:1:rule/x")
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["time"] == "2026-11-21T12:00:00Z"
    assert event["resources"] == ["arn:aws:events:r:1:rule/x"]


def test_sqs_event_carries_the_queue_arn_and_message_fields():
    message = {"MessageId": "m1", "ReceiptHandle": "rh", "Body": "{}", "Attributes": {"ApproximateReceiveCount": "2"}}
    (record,) = sqs_event([message], "http://127.0.0.1:5000/123456789012/tickwork-HighQueue")["Records"]
    assert record["eventSourceARN"] == "arn:aws:sqs:us-east-1:123456789012:tickwork-HighQueue"
    assert record["attributes"]["ApproximateReceiveCount"] == "2"
    assert record["messageId"] == "m1"


# ---------------------------------------------------------------- batchItemFailures, as Lambda reads them


@pytest.mark.parametrize(
    ("response", "failed"),
    [
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "b"}]}, {"b"}),
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, {"a", "b"}),  # empty: the whole batch
        ({"batchItemFailures": [{"itemIdentifier": None}]}, {"a", "b"}),  # null: the whole batch
        ({"batchItemFailures": [{"itemIdentifier": "zzz"}]}, {"a", "b"}),  # unknown: the whole batch
        ({"batchItemFailures": "nope"}, {"a", "b"}),
        ("a string", {"a", "b"}),
    ],
)
def test_batch_item_failures_are_read_as_lambda_reads_them(response, failed):
    assert failed_ids_from(response, {"a", "b"}) == failed


class _BatchSqs:
    """SQS's two batch actions the poller calls: the first DeleteMessageBatch call fails outright, later ones
    fail their first entry; ChangeMessageVisibilityBatch succeeds."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[dict]]] = []

    def delete_message_batch(self, QueueUrl, Entries):
        self.calls.append(("delete", Entries))
        if len(self.calls) == 1:
            raise RuntimeError("throttled")
        return {"Successful": [{"Id": e["Id"]} for e in Entries[1:]], "Failed": [{"Id": Entries[0]["Id"]}]}

    def change_message_visibility_batch(self, QueueUrl, Entries):
        self.calls.append(("release", Entries))
        return {"Successful": [{"Id": e["Id"]} for e in Entries]}


def test_batch_actions_go_ten_at_a_time_and_a_failed_call_or_entry_is_logged_and_skipped(caplog):
    from tickwork_local.runtime.lambda_runtime import SqsEventSource
    from tickwork_local.runtime.poller import QueuePoller

    source = SqsEventSource("HighBand", "HighQueue", "high", 10, 0, 2, True, True)
    sqs = _BatchSqs()
    poller = QueuePoller(sqs=sqs, queue_url="q", source=source, invoke=lambda event: None, concurrency=1)
    messages = [{"MessageId": f"m{i}", "ReceiptHandle": f"r{i}"} for i in range(15)]

    assert poller._delete(messages) == 4  # the first ten: the call failed; the last five: one entry failed
    assert "DeleteMessageBatch on q failed: throttled" in caplog.text
    assert "DeleteMessageBatch entry failed: {'Id': '0'}" in caplog.text
    assert poller._release(messages) == 15
    assert poller.stats.released == 15
    assert [(kind, len(entries)) for kind, entries in sqs.calls] == [
        ("delete", 10), ("delete", 5), ("release", 10), ("release", 5)
    ]  # fmt: skip
    assert sqs.calls[3][1][0] == {"Id": "0", "ReceiptHandle": "r10", "VisibilityTimeout": 0}


# ---------------------------------------------------------------- API Gateway, payload 2.0


def test_http_request_becomes_a_payload_v2_event():
    when = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
    event = http_api_event(
        method="post",
        target="/v1/jobs?limit=5&tag=a&tag=b",
        headers=[
            ("Host", "127.0.0.1:3000"),
            ("Content-Type", "application/json"),
            ("X-Thing", "1"),
            ("x-thing", "2"),
            ("Cookie", "a=1; b=2"),
            ("User-Agent", "curl"),
        ],
        body=b'{"name": "x"}',
        now=when,
        request_id="req",
    )
    assert event["version"] == "2.0"
    assert event["routeKey"] == "$default"
    assert event["rawPath"] == "/v1/jobs"
    assert event["rawQueryString"] == "limit=5&tag=a&tag=b"
    assert event["queryStringParameters"] == {"limit": "5", "tag": "a,b"}
    assert event["headers"]["x-thing"] == "1,2"
    assert event["headers"]["content-type"] == "application/json"
    assert "cookie" not in event["headers"]
    assert event["cookies"] == ["a=1", "b=2"]
    assert event["body"] == '{"name": "x"}'
    assert event["isBase64Encoded"] is False
    http = event["requestContext"]["http"]
    assert http == {
        "method": "POST",
        "path": "/v1/jobs",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "curl",
    }
    assert event["requestContext"]["stage"] == "$default"
    assert event["requestContext"]["timeEpoch"] == int(when.timestamp() * 1000)
    assert event["requestContext"]["requestId"] == "req"


def test_binary_bodies_are_base64_and_an_empty_request_has_no_body():
    binary = http_api_event(
        method="PUT", target="/x", headers=[("Content-Type", "application/octet-stream")], body=b"\x00\xff"
    )
    assert binary["isBase64Encoded"] is True
    assert base64.b64decode(binary["body"]) == b"\x00\xff"
    bare = http_api_event(method="GET", target="/v1/health", headers=[], body=b"")
    assert "body" not in bare
    assert "queryStringParameters" not in bare


def test_function_responses_are_read_as_api_gateway_reads_them():
    status, headers, body = http_api_response(
        {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": '{"a":1}', "cookies": ["c=1"]}
    )
    assert status == 201
    assert ("Set-Cookie", "c=1") in headers
    assert body == b'{"a":1}'
    assert (
        http_api_response({"statusCode": 200, "body": base64.b64encode(b"\x01").decode(), "isBase64Encoded": True})[2]
        == b"\x01"
    )
    # Without a statusCode, the whole response is the JSON body, status 200.
    status, headers, body = http_api_response({"hello": "world"})
    assert status == 200
    assert json.loads(body) == {"hello": "world"}
    assert http_api_response({"statusCode": 204})[2] == b""


def test_docs_page_loads_swagger_ui_from_this_server_and_the_spec_from_the_api():
    page = docs_page("/v1/openapi.json")
    assert 'src="/docs/swagger-ui-bundle.min.js"' in page
    assert 'url: "/v1/openapi.json"' in page
    assert "https://" not in page  # works offline


# ---------------------------------------------------------------- the tick's clock


@pytest.mark.parametrize(
    ("now", "period", "slot"),
    [(0.5, 60, 60), (59.999, 60, 60), (60.0, 60, 120), (61, 60, 120), (7.2, 2, 8), (8.0, 2, 10)],
)
def test_ticks_are_aligned_to_the_wall_clock(now, period, slot):
    assert next_slot(now, period) == slot


# ---------------------------------------------------------------- lines


def _run(**fields):
    base = {
        "id": "j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000",
        "job_id": "j01jd2k3m4n5p6q7r8s9t0v1w2",
        "tenant": "default",
        "scheduled_for": datetime(2026, 11, 21, 12, 0, 5, tzinfo=UTC),
        "status": RunStatus.RUNNING,
        "started_at": datetime(2026, 11, 21, 12, 0, 5, 412_000, tzinfo=UTC),
        "lateness_ms": 412,
        "attempts": 1,
    }
    return Run(**{**base, **fields})


FINISHED = datetime(2026, 11, 21, 12, 0, 5, 430_000, tzinfo=UTC)


def test_a_success_line_says_scheduled_started_lateness_and_the_result():
    line = format_run_line(
        _run(), status=RunStatus.SUCCEEDED, finished=FINISHED, name="nightly", document={"n": 3}, duration_ms=12
    )
    assert line == (
        "12:00:05.430 run SUCCEEDED nightly (j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000) "
        'scheduled 12:00:05.000 -> started 12:00:05.412, late 412 ms, attempt 1, 12 ms: result {"n":3}'
    )


def test_failure_retry_and_skip_lines_say_what_happens_next():
    error = RunError(type="EchoFailure", message="attempt 1 fails on purpose")
    retry = format_run_line(_run(), status=RunStatus.RETRYING, finished=FINISHED, error=error)
    failed = format_run_line(_run(attempts=3), status=RunStatus.FAILED, finished=FINISHED, error=error, node="n1")
    skipped = format_run_line(_run(), status=RunStatus.SKIPPED, finished=FINISHED, skip_reason=SkipReason.PAUSED)
    assert retry.endswith("error EchoFailure: attempt 1 fails on purpose; will retry")
    assert failed.startswith("12:00:05.430 [n1] run FAILED")
    assert failed.endswith("no attempts left, on the DLQ")
    assert "attempt 3" in failed
    assert skipped.endswith("skipped: paused")
    located = format_run_line(
        _run(),
        status=RunStatus.SUCCEEDED,
        finished=FINISHED,
        result=RunResult(location="s3://b/k", sha256="x", bytes=7),
    )
    assert located.endswith("result 7 B at s3://b/k")


def test_a_quiet_tick_prints_nothing_and_a_busy_or_failed_one_a_line():
    when = datetime(2026, 11, 21, 12, 1, tzinfo=UTC)
    assert format_tick_line(when, {"dispatched": 0, "skipped": 0}, None, 0.01) is None
    busy = format_tick_line(when, {"dispatched": 3, "redispatched": 1}, None, 0.045)
    assert busy == "12:01:00.000 tick dispatched 3, redispatched 1 (45 ms)"
    failed = format_tick_line(when, None, RuntimeError("boom"), 0.002)
    assert failed is not None
    assert "FAILED" in failed
    assert "boom" in failed


class _Store:
    """A JobStore whose parts are itself."""

    def __init__(self, recorded: bool) -> None:
        self.recorded = recorded
        self.table = "t"
        self.jobs = self.leases = self

    def finish_run(self, run, **kwargs):
        return Finished(recorded=self.recorded)

    def get_job(self, job_id, **kwargs):
        return None

    def advance_job(self, job, **kwargs):
        return SimpleNamespace(job=SimpleNamespace(id=job, name="nightly"))


class _Results:
    def write_once(self, run, document):
        return ("result", True)


def test_observed_store_reports_recorded_outcomes_only_and_passes_everything_through():
    out = io.StringIO()
    runlog = RunLog(out)
    results = ObservedResults(_Results(), runlog)
    assert results.write_once(_run(), {"n": 1}) == ("result", True)

    assert (
        ObservedStore(_Store(recorded=False), runlog)
        .leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED)
        .recorded
        is False
    )
    assert out.getvalue() == ""  # a lost lease records nothing, so says nothing
    store = ObservedStore(_Store(recorded=True), runlog)
    assert store.table == "t"
    assert store.jobs.get_job("j") is None
    assert store.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED, duration_ms=3).recorded is True
    assert out.getvalue().endswith('result {"n":1}\n')


def test_a_run_line_names_the_job_its_claim_advanced_though_the_executor_never_read_it():
    # The message's copy of the job spares the executor its read (tickwork.model.run_spec); the claim's view names it.
    out = io.StringIO()
    store = ObservedStore(_Store(recorded=True), RunLog(out))
    store.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED)
    assert " run SUCCEEDED j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000 " in out.getvalue()  # no name seen yet
    assert store.jobs.advance_job("j01jd2k3m4n5p6q7r8s9t0v1w2").job.name == "nightly"
    store.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED)
    assert " run SUCCEEDED nightly (j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000) " in out.getvalue().splitlines()[1]


class _NamingStore(_Store):
    """A store that knows the job: what a triggered or backfilled run's executor never read, nor a claim saw."""

    def __init__(self, recorded: bool, fails: bool = False) -> None:
        super().__init__(recorded)
        self.fails = fails
        self.reads: list[str] = []

    def get_job(self, job_id, **kwargs):
        self.reads.append(job_id)
        if self.fails:
            raise ConnectionError("injected")
        return SimpleNamespace(id=job_id, name="nightly")


def test_every_run_line_names_its_job_though_no_claim_or_read_saw_it():
    out = io.StringIO()
    inner = _NamingStore(recorded=True)
    store = ObservedStore(inner, RunLog(out))
    store.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED)
    store.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED)
    lines = out.getvalue().splitlines()
    assert all(" run SUCCEEDED nightly (j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000) " in line for line in lines)
    assert inner.reads == ["j01jd2k3m4n5p6q7r8s9t0v1w2"]  # read once, then remembered


def test_a_run_claimed_by_another_function_is_named_in_its_executors_line_without_a_read():
    # The API and the tick claim (their stores report names only); the executor records the outcome.
    out = io.StringIO()
    runlog = RunLog(out)
    claimer = ObservedStore(_Store(recorded=True), runlog, outcomes=False)
    executor = _NamingStore(recorded=True)
    assert claimer.jobs.advance_job("j01jd2k3m4n5p6q7r8s9t0v1w2").job.name == "nightly"
    assert claimer.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED).recorded is True
    assert out.getvalue() == ""  # the claimer's own outcomes are not its lines
    ObservedStore(executor, runlog).leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED)
    assert " run SUCCEEDED nightly (j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000) " in out.getvalue()
    assert executor.reads == []


def test_a_step_run_line_names_its_step_and_workflow_run():
    out = io.StringIO()
    inner = _NamingStore(recorded=True)
    step = _run(workflow_run_id="w01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000", step_id="extract")
    ObservedStore(inner, RunLog(out)).leases.finish_run(step, status=RunStatus.SUCCEEDED, now=FINISHED)
    assert " run SUCCEEDED step extract of w01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000 (" in out.getvalue()
    assert inner.reads == []


def test_a_failed_read_of_the_name_leaves_the_recorded_outcome_and_its_line():
    out = io.StringIO()
    store = ObservedStore(_NamingStore(recorded=True, fails=True), RunLog(out))
    assert store.leases.finish_run(_run(), status=RunStatus.SUCCEEDED, now=FINISHED).recorded is True
    assert " run SUCCEEDED j01jd2k3m4n5p6q7r8s9t0v1w2.1795262405000 " in out.getvalue()


# ---------------------------------------------------------------- ports


def test_a_taken_port_is_reported():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(PortInUse):
            check_port_free("127.0.0.1", taken.getsockname()[1])
    check_port_free("127.0.0.1", 0)


def test_a_template_read_is_the_callers_own_copy_with_long_form_tags_and_dates_kept_as_strings():
    """The parse is kept (the suites read template.yaml thousands of times), so what a caller changes must not reach
    the next reader."""
    from tickwork_local.stack.template import loads_template

    text = (
        "AWSTemplateFormatVersion: 2010-09-09\nResources:\n  A:\n    Properties: {Name: !Ref B, Arn: !GetAtt C.D.E}\n"
    )
    first = loads_template(text)
    assert first["AWSTemplateFormatVersion"] == "2010-09-09"
    assert first["Resources"]["A"]["Properties"] == {"Name": {"Ref": "B"}, "Arn": {"Fn::GetAtt": ["C", "D.E"]}}
    first["Resources"]["A"]["Properties"]["Name"] = "changed"
    assert loads_template(text)["Resources"]["A"]["Properties"]["Name"] == {"Ref": "B"}
    assert load_template()["Resources"] is not load_template()["Resources"]


def test_a_template_that_is_not_a_mapping_is_refused():
    from tickwork_local.stack.template import loads_template

    with pytest.raises(ValueError, match="must be a mapping"):
        loads_template("- a list\n")


def test_each_execution_environment_of_a_function_has_its_own_sibling_modules():
    """As in Lambda, where an environment is a process: the API's routes are Powertools Routers that keep the event of
    the resolver that included them last, so environments sharing one routes module read each other's requests
    (tests/api/test_debounce_racing.py's racing callers lost and doubled payloads)."""
    from tickwork_local.runtime.lambda_runtime import function_config, load_handler_module
    from tickwork_local.stack.template import load_template

    config = function_config(load_template(), "ApiFunction")
    one, two = load_handler_module(config), load_handler_module(config)
    assert one.metrics_routes is not two.metrics_routes
