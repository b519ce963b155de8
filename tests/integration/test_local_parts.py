"""The local runtime's moving parts, each against real HTTP and a moto server in this process: execution
environments, the SQS event source mapping, API Gateway, the tick schedule, and moto made atomic and prompt.

Waits are on events with deadlines (these parts run on real threads and real time), never fixed sleeps."""

from __future__ import annotations

import json
import os
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from tickwork_local.aws.motoserver import InProcessMoto
from tickwork_local.runtime.apigateway import ApiGatewayServer
from tickwork_local.runtime.lambda_runtime import FunctionConfig, FunctionRuntime, SqsEventSource
from tickwork_local.runtime.poller import QueuePoller
from tickwork_local.runtime.ticker import Ticker

SOURCE = SqsEventSource(
    name="HighBand",
    queue_logical_id="HighQueue",
    band="high",
    batch_size=10,
    batching_window_seconds=0,
    maximum_concurrency=2,
    report_batch_item_failures=True,
    enabled=True,
)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    moto = InProcessMoto("127.0.0.1", 0)
    try:
        yield moto.start()
    finally:
        moto.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def sqs(endpoint: str) -> Any:
    return boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")


@pytest.fixture
def queue(sqs: Any, request: pytest.FixtureRequest) -> str:
    return sqs.create_queue(QueueName=f"q-{request.node.name[:60]}", Attributes={"VisibilityTimeout": "300"})[
        "QueueUrl"
    ]


def counts(sqs: Any, url: str) -> dict[str, int]:
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return {
        "visible": int(attributes[names[0]]),
        "in_flight": int(attributes[names[1]]),
        "delayed": int(attributes[names[2]]),
    }


def send(sqs: Any, url: str, bodies: list[str], delay: int = 0) -> None:
    for start in range(0, len(bodies), 10):
        entries = [
            {"Id": str(i), "MessageBody": b, "DelaySeconds": delay} for i, b in enumerate(bodies[start : start + 10])
        ]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)


class Recorder:
    """An executor stand-in: records every event, answers with `respond`, signals after `expect` records."""

    def __init__(self, respond: Any, expect: int) -> None:
        self.respond = respond
        self.expect = expect
        self.events: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.active = 0
        self.most_active = 0

    @property
    def records(self) -> list[dict[str, Any]]:
        return [r for e in self.events for r in e["Records"]]

    def __call__(self, event: dict[str, Any]) -> Any:
        with self.lock:
            self.events.append(event)
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            return self.respond(event)
        finally:
            with self.lock:
                self.active -= 1
                if len(self.records) >= self.expect:
                    self.done.set()


def poller(sqs: Any, url: str, invoke: Any, **kwargs: Any) -> QueuePoller:
    kwargs.setdefault("concurrency", 2)
    kwargs.setdefault("wait_seconds", 1)
    p = QueuePoller(sqs=sqs, queue_url=url, source=kwargs.pop("source", SOURCE), invoke=invoke, **kwargs)
    p.start()
    return p


def stop(p: QueuePoller) -> None:
    p.stop()
    assert p.join(5)


# ---------------------------------------------------------------- the SQS event source mapping


def test_a_join_for_an_endpoint_stopping_too_leaves_lanes_waiting_in_a_poll_but_not_a_lane_invoking(sqs, queue):
    entered, gate = threading.Event(), threading.Event()

    def respond(event: dict[str, Any]) -> None:
        entered.set()
        gate.wait(10)

    p = poller(sqs, queue, Recorder(respond, expect=1), wait_seconds=20)
    send(sqs, queue, ["held"])
    assert entered.wait(10)  # one lane is in its invocation, held at the gate; the others wait in 20 s polls
    p.stop()
    assert not p.join(0.5)  # the lanes in their long polls are waited for, up to their WaitTimeSeconds
    assert not p.join(0.5, polls_too=False)  # the lane invoking is waited for still
    gate.set()
    assert p.join(5, polls_too=False)  # and only it: the polls, which hold nothing, are left
    assert p.stats.deleted == 1


def test_successes_are_deleted_and_reported_failures_left_to_their_visibility_timeout(sqs, queue):
    send(sqs, queue, [f"m{i}" for i in range(6)])

    def respond(event):
        return {
            "batchItemFailures": [
                {"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] in ("m1", "m4")
            ]
        }

    recorder = Recorder(respond, expect=6)
    p = poller(sqs, queue, recorder)
    try:
        assert recorder.done.wait(10)
    finally:
        stop(p)
    assert sorted(r["body"] for r in recorder.records) == [f"m{i}" for i in range(6)]
    assert counts(sqs, queue) == {"visible": 0, "in_flight": 2, "delayed": 0}
    assert p.stats.deleted == 4
    assert p.stats.left == 2
    record = recorder.records[0]
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"].endswith(queue.rsplit("/", 1)[1])
    assert record["attributes"]["ApproximateReceiveCount"] == "1"


def test_an_invocation_that_throws_leaves_its_whole_batch(sqs, queue):
    send(sqs, queue, ["a", "b", "c"])

    def respond(event):
        raise RuntimeError("function error")

    recorder = Recorder(respond, expect=3)
    p = poller(sqs, queue, recorder)
    try:
        assert recorder.done.wait(10)
    finally:
        stop(p)
    assert counts(sqs, queue)["in_flight"] == 3
    assert p.stats.function_errors >= 1
    assert p.stats.deleted == 0


def test_batches_are_at_most_the_batch_size_and_invocations_at_most_the_concurrency(sqs, queue):
    send(sqs, queue, [f"m{i}" for i in range(30)])
    gate = threading.Event()

    def respond(event):
        gate.wait(5)  # hold the invocations so that they overlap
        return {"batchItemFailures": []}

    recorder = Recorder(respond, expect=30)
    source = SqsEventSource(**{**SOURCE.__dict__, "batch_size": 4})
    p = poller(sqs, queue, recorder, source=source, concurrency=2, lanes=5)
    try:
        # Two invocations run; the other lanes hold their batches until a slot frees.
        deadline = time.monotonic() + 10
        while recorder.active < 2 and time.monotonic() < deadline:
            recorder.done.wait(0.05)
        gate.set()
        assert recorder.done.wait(15)
    finally:
        stop(p)
    assert recorder.most_active == 2
    assert max(len(e["Records"]) for e in recorder.events) <= 4
    assert counts(sqs, queue) == {"visible": 0, "in_flight": 0, "delayed": 0}


def test_unfinished_messages_are_released_for_redelivery_at_once(sqs, queue):
    send(sqs, queue, ["slow-1", "slow-2"])
    started = threading.Event()
    release = threading.Event()

    def respond(event):
        started.set()
        release.wait(10)
        return {"batchItemFailures": []}

    p = poller(sqs, queue, Recorder(respond, expect=2), concurrency=1, lanes=1)
    try:
        assert started.wait(10)
        p.stop()
        assert not p.join(0.2)  # still in its invocation
        assert p.release_unfinished() == 2
        assert counts(sqs, queue)["visible"] == 2  # back now, not after the 300 s visibility timeout
    finally:
        release.set()
        p.join(5)


def test_a_delayed_message_is_received_as_soon_as_its_delay_ends(sqs, queue):
    recorder = Recorder(lambda event: {"batchItemFailures": []}, expect=1)
    p = poller(sqs, queue, recorder, lanes=1, wait_seconds=5)
    try:
        sent = time.time()
        send(sqs, queue, ["later"], delay=1)
        assert recorder.done.wait(10)
        received = int(recorder.records[0]["attributes"]["ApproximateFirstReceiveTimestamp"]) / 1000
    finally:
        stop(p)
    # moto alone re-checks a waiting long poll once a second; with the wake-up it is prompt.
    assert 1.0 <= received - sent < 1.4


# ---------------------------------------------------------------- moto made atomic


def test_concurrent_conditional_updates_of_one_item_let_exactly_one_through(endpoint):
    """The executor's lease: QUEUED -> RUNNING under a condition. Unserialized, moto lets two through now
    and then (about one round in thirty here)."""
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    ddb.create_table(
        TableName="races",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    clients = [boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1") for _ in range(8)]
    winners: list[int] = []

    def lease(round_: int, client: Any, ready: threading.Barrier) -> None:
        ready.wait()
        try:
            client.update_item(
                TableName="races",
                Key={"pk": {"S": f"run-{round_}"}},
                UpdateExpression="SET #s = :running, attempts = if_not_exists(attempts, :zero) + :one",
                ConditionExpression="#s = :queued",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":running": {"S": "RUNNING"},
                    ":queued": {"S": "QUEUED"},
                    ":zero": {"N": "0"},
                    ":one": {"N": "1"},
                },
            )
            winners.append(round_)
        except client.exceptions.ConditionalCheckFailedException:
            pass

    rounds = 30
    for round_ in range(rounds):
        ddb.put_item(TableName="races", Item={"pk": {"S": f"run-{round_}"}, "status": {"S": "QUEUED"}})
        barrier = threading.Barrier(len(clients))
        threads = [threading.Thread(target=lease, args=(round_, c, barrier)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert sorted(winners) == list(range(rounds))


# ---------------------------------------------------------------- execution environments


def _function(tmp_path: Path, timeout: float = 7) -> FunctionConfig:
    code = tmp_path / "fn"
    code.mkdir()
    (code / "app.py").write_text(
        textwrap.dedent(
            """
            import threading
            injected = None
            calls = 0
            def use_services(value):
                global injected
                injected = value
            def handler(event, context):
                global calls
                calls += 1
                if event.get("hold"):
                    event["hold"].wait(5)
                return {"env": id(globals()), "calls": calls, "injected": injected,
                        "remaining_ms": context.get_remaining_time_in_millis(), "request": context.aws_request_id}
            """
        )
    )
    return FunctionConfig("Fn", code, "app.handler", timeout, 128, {})


def test_each_environment_is_its_own_module_instance_reused_when_warm(tmp_path):
    runtime = FunctionRuntime(
        _function(tmp_path), prepare=lambda m: m.use_services("wiring"), max_environments=2, function_name="fn"
    )
    first = runtime.invoke({})
    second = runtime.invoke({})
    assert first["env"] == second["env"]  # warm: the same environment, its globals kept
    assert second["calls"] == 2
    assert first["injected"] == "wiring"
    assert 6_000 < first["remaining_ms"] <= 7_000  # a fresh context with the template's timeout
    assert first["request"] != second["request"]

    hold = threading.Event()
    results: list[dict[str, Any]] = []
    busy = threading.Thread(target=lambda: results.append(runtime.invoke({"hold": hold})))
    busy.start()
    deadline = time.monotonic() + 5
    while runtime._idle and time.monotonic() < deadline:  # the busy invocation took the warm environment
        time.sleep(0.01)
    concurrent = runtime.invoke({})  # a second environment: a cold start with module globals of its own
    hold.set()
    busy.join(5)
    assert concurrent["env"] != results[0]["env"]
    assert concurrent["calls"] == 1
    assert runtime.environments == 2


# ---------------------------------------------------------------- API Gateway


def test_api_gateway_passes_requests_as_events_and_maps_responses_and_errors():
    seen: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> Any:
        seen.append(event)
        if event["rawPath"] == "/boom":
            raise RuntimeError("function error")
        if event["rawPath"] == "/plain":
            return {"plain": True}
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "X-Extra": "1"}, "body": '{"ok":1}'}

    server = ApiGatewayServer(("127.0.0.1", 0), invoke)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        request = urllib.request.Request(
            f"{base}/v1/jobs?x=1", data=b'{"a": 1}', method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 201
            assert response.headers["X-Extra"] == "1"
            assert response.headers["Apigw-Requestid"]
            assert json.loads(response.read()) == {"ok": 1}
        event = seen[-1]
        assert event["requestContext"]["http"]["method"] == "POST"
        assert event["rawPath"] == "/v1/jobs"
        assert event["queryStringParameters"] == {"x": "1"}
        assert json.loads(event["body"]) == {"a": 1}

        with urllib.request.urlopen(f"{base}/plain", timeout=5) as response:
            assert json.loads(response.read()) == {"plain": True}
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(f"{base}/boom", timeout=5)
        assert failure.value.code == 500
        assert json.loads(failure.value.read()) == {"message": "Internal Server Error"}

        with urllib.request.urlopen(f"{base}/docs", timeout=5) as page:
            assert "swagger-ui" in page.read().decode()
        with urllib.request.urlopen(f"{base}/docs/swagger-ui.min.css", timeout=5) as css:
            assert css.headers["Content-Type"] == "text/css"
        assert all(e["rawPath"] != "/docs" for e in seen)  # the docs are the local server's own

        with urllib.request.urlopen(urllib.request.Request(f"{base}/v1/dlq", method="TRACE"), timeout=5) as traced:
            assert traced.status == 201  # the function's answer (the API's is a 405), not the server's 501
        assert seen[-1]["requestContext"]["http"]["method"] == "TRACE"
    finally:
        server.stop()


# ---------------------------------------------------------------- the tick schedule


def test_the_first_tick_runs_at_start_and_a_failing_tick_does_not_stop_the_schedule():
    ticks: list[Any] = []
    two = threading.Event()

    def invoke(event: dict[str, Any]) -> Any:
        ticks.append(event)
        if len(ticks) == 1:
            raise RuntimeError("the first tick fails")
        two.set()
        return {"dispatched": 0}

    reported: list[BaseException | None] = []
    ticker = Ticker(
        invoke,
        period_seconds=1,
        event_for=lambda instant: {"time": instant.isoformat()},
        on_result=lambda instant, result, error, seconds: reported.append(error),
    )
    ticker.start()
    try:
        assert two.wait(5)
    finally:
        ticker.stop()
        assert ticker.join(5)
    assert isinstance(reported[0], RuntimeError)
    assert reported[1] is None
    assert ticker.failures == 1
    # The second tick fires on a whole second of the wall clock.
    assert ticks[1]["time"].split("+")[0].endswith(".000000") or "." not in ticks[1]["time"].split("+")[0]
