"""The local runtime's metrics: EMF lines become CloudWatch data (moto), other lines pass through untouched,
nothing is lost when a batch is full; AWS's own queue and concurrency metrics are played every minute; and what
the functions print (tickwork.executor.run_metrics) is what GET /v1/metrics asks for."""

from __future__ import annotations

import io
import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from tickwork_local.aws.emf_forwarding import (
    MAX_VALUES_PER_CALL,
    AwsMetricsPlayer,
    EmfForwarder,
    StdoutRouter,
    data_of,
    emf_document,
)

AT = datetime(2026, 11, 23, 8, 0, 5, tzinfo=UTC)


def emf_line(metrics: dict[str, Any], dims: dict[str, str], at: datetime = AT, namespace: str = "Tickwork") -> str:
    return json.dumps(
        {
            "_aws": {
                "Timestamp": int(at.timestamp() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": namespace,
                        "Dimensions": [list(dims)],
                        "Metrics": [
                            {"Name": n, "Unit": "Milliseconds" if n.endswith("Ms") else "Count"} for n in metrics
                        ],
                    }
                ],
            },
            **dims,
            **metrics,
        }
    )


@pytest.fixture
def cloudwatch(mocked_aws: None) -> Any:
    return boto3.client("cloudwatch", region_name="us-east-1")


class CountingCloudWatch:
    """moto's client, counting PutMetricData calls and their values."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[int] = []

    def put_metric_data(self, **kwargs: Any) -> Any:
        self.calls.append(sum(int(sum(d["Counts"])) for d in kwargs["MetricData"]))
        return self.client.put_metric_data(**kwargs)


def stat(cloudwatch: Any, name: str, dims: dict[str, str], statistic: str, namespace: str = "Tickwork") -> float | None:
    answer = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "q",
                "MetricStat": {
                    "Metric": {
                        "Namespace": namespace,
                        "MetricName": name,
                        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                    },
                    "Period": 60,
                    "Stat": statistic,
                },
            }
        ],
        StartTime=AT - timedelta(minutes=1),
        EndTime=AT + timedelta(minutes=1),
    )
    values = answer["MetricDataResults"][0]["Values"]
    return values[0] if values else None


def test_emf_lines_become_metric_data_and_other_lines_pass_through(cloudwatch: Any) -> None:
    forwarder = EmfForwarder(cloudwatch)
    terminal = io.StringIO()
    router = StdoutRouter(terminal, forwarder.offer)

    print("12:00:10.212 run SUCCEEDED hello", file=router)
    print(emf_line({"StartLatenessMs": [120.0, 80.0], "RunsSucceeded": 1}, {"service": "tickwork"}), file=router)
    router.write('{"not": "emf"}\npartial ')
    router.write("line\n")
    forwarder.flush()

    assert terminal.getvalue() == '12:00:10.212 run SUCCEEDED hello\n{"not": "emf"}\npartial line\n'
    assert stat(cloudwatch, "StartLatenessMs", {"service": "tickwork"}, "Maximum") == 120.0
    assert stat(cloudwatch, "StartLatenessMs", {"service": "tickwork"}, "SampleCount") == 2.0
    assert stat(cloudwatch, "RunsSucceeded", {"service": "tickwork"}, "Sum") == 1.0


def test_nothing_is_lost_when_a_batch_is_full(cloudwatch: Any) -> None:
    counting = CountingCloudWatch(cloudwatch)
    forwarder = EmfForwarder(counting)
    for i in range(2500):  # 2,500 values of 7 distinct latencies, over two metrics and two namespaces
        forwarder.offer(emf_line({"StartLatenessMs": float(i % 7)}, {"service": "tickwork", "band": "high"}))
    for _ in range(30):
        forwarder.offer(emf_line({"RunsFailed": 1}, {"service": "tickwork"}, namespace="Other"))

    calls = forwarder.flush()

    assert calls == len(counting.calls) == 4  # 1,000 + 1,000 + 500 of Tickwork, then Other's 30
    assert all(values <= MAX_VALUES_PER_CALL for values in counting.calls)
    assert sum(counting.calls) == forwarder.forwarded_values == 2530
    assert stat(cloudwatch, "StartLatenessMs", {"service": "tickwork", "band": "high"}, "SampleCount") == 2500.0
    assert stat(cloudwatch, "StartLatenessMs", {"service": "tickwork", "band": "high"}, "p50") == 3.0
    assert stat(cloudwatch, "RunsFailed", {"service": "tickwork"}, "Sum", namespace="Other") == 30.0


def test_a_failed_put_keeps_its_data_for_the_next_flush(cloudwatch: Any) -> None:
    class Refusing:
        refusals = 1

        def put_metric_data(self, **kwargs: Any) -> None:
            if self.refusals:
                self.refusals -= 1
                raise ConnectionError("endpoint down")
            cloudwatch.put_metric_data(**kwargs)

    forwarder = EmfForwarder(Refusing())
    forwarder.offer(emf_line({"RunsRetried": 1}, {"service": "tickwork"}))

    assert forwarder.flush() == 0
    assert forwarder.flush() == 1
    assert stat(cloudwatch, "RunsRetried", {"service": "tickwork"}, "Sum") == 1.0


def test_the_router_keeps_each_threads_lines_whole() -> None:
    terminal = io.StringIO()
    router = StdoutRouter(terminal, lambda line: False)

    def speak(name: str) -> None:
        for i in range(200):
            router.write(f"{name} line ")
            router.write(f"{i}\n")

    threads = [threading.Thread(target=speak, args=(n,)) for n in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    lines = terminal.getvalue().splitlines()
    assert len(lines) == 600
    assert all(line.split(" ")[0] in "abc" and line.split(" ")[1] == "line" for line in lines)


def test_what_is_not_an_emf_document() -> None:
    assert emf_document("plain text") is None
    assert emf_document('{"_aws": {"Timestamp": 1}}') is None
    assert emf_document('{"CloudWatchMetrics": broken') is None
    assert emf_document('["CloudWatchMetrics"]') is None


def test_a_dimension_set_whose_member_is_missing_is_skipped() -> None:
    document = json.loads(emf_line({"RunsFailed": 1}, {"service": "tickwork"}))
    document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] = [["service"], ["band"]]

    assert [d.dimensions for d in data_of(document)] == [(("service", "tickwork"),)]


def test_aws_metrics_of_the_queues_and_the_executor(cloudwatch: Any) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="tickwork-HighQueue")["QueueUrl"]
    for _ in range(3):
        sqs.send_message(QueueUrl=url, MessageBody="run")
    player = AwsMetricsPlayer(sqs, cloudwatch, {"high": url}, "tickwork-ExecutorFunction")
    sent_ms = int((AT.timestamp() - 42) * 1000)
    event = {
        "Records": [
            {
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:tickwork-HighQueue",
                "attributes": {"SentTimestamp": str(sent_ms)},
            }
        ]
    }
    started, release = threading.Event(), threading.Event()

    def invoke(_: Any) -> None:
        started.set()
        release.wait(5)

    counted = player.in_flight.wrap(invoke, player.saw)
    workers = [threading.Thread(target=counted, args=(event,)) for _ in range(2)]
    for w in workers:
        w.start()
    started.wait(5)
    while player.in_flight.current < 2:
        threading.Event().wait(0.01)
    release.set()
    for w in workers:
        w.join()

    player.publish(now=AT.timestamp())

    queue = {"QueueName": "tickwork-HighQueue"}
    assert stat(cloudwatch, "ApproximateNumberOfMessagesVisible", queue, "Maximum", namespace="AWS/SQS") == 3.0
    assert stat(cloudwatch, "ApproximateAgeOfOldestMessage", queue, "Maximum", namespace="AWS/SQS") == 42.0
    function = {"FunctionName": "tickwork-ExecutorFunction"}
    assert stat(cloudwatch, "ConcurrentExecutions", function, "Maximum", namespace="AWS/Lambda") == 2.0
    assert player.in_flight.take_peak() == 0  # the next minute starts from what is in flight now


def test_the_functions_emf_documents_are_what_the_route_asks_for(
    cloudwatch: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tickwork.executor import run_metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "tickwork")
    run_metrics.start_lateness(250, band="high", tenant="acme")
    run_metrics.count_for_tenant("RunsSucceeded", "acme")

    lines = capsys.readouterr().out.splitlines()
    data = [d for line in lines if (doc := emf_document(line)) for d in data_of(doc)]

    assert {(d.name, d.dimensions, d.values) for d in data} == {
        ("StartLatenessMs", (("band", "high"), ("service", "tickwork")), (250.0,)),
        ("StartLatenessMs", (("tenant", "acme"), ("service", "tickwork")), (250.0,)),
        ("RunsSucceeded", (("tenant", "acme"), ("service", "tickwork")), (1.0,)),
    }


def test_metrics_disabled_prints_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tickwork.executor import run_metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    run_metrics.count_for_tenant("RunsFailed", "acme")

    assert capsys.readouterr().out == ""
