"""GET /v1/metrics and /v1/metrics/catalogue against moto's CloudWatch (percentiles and metric math played by
tickwork_local.aws.moto_cloudwatch), with data put as the EMF metrics would be: series values, the grid, tenancy
and every bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tickwork.settings import MetricsSettings, TelemetryNames

from tests.api.conftest import ACME, GLOBEX, ApiClient, role_identity
from tests.harness import START

ADMIN = role_identity("tickwork-admin", session="ops")
ACME_TENANT = "acme"  # the role tickwork-tenant-<name> is tenant <name>
T0 = START - timedelta(minutes=10)  # the data's first minute; START is the pipeline clock's now


@pytest.fixture
def metrics_api(api: ApiClient, monkeypatch: pytest.MonkeyPatch) -> ApiClient:
    monkeypatch.setenv("EXECUTOR_FUNCTION_NAME", "tickwork-executor")
    monkeypatch.setenv("EXECUTOR_CONCURRENCY", "6,2,2")
    return api


def put(api: ApiClient, namespace: str, name: str, dims: dict[str, str], at: datetime, values: list[float]) -> None:
    """As CloudWatch Logs turns an EMF document into metric data (Values and Counts)."""
    distinct = sorted(set(values))
    api.pipeline.services.clients.client("cloudwatch").put_metric_data(
        Namespace=namespace,
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                "Timestamp": at,
                "Values": distinct,
                "Counts": [float(values.count(v)) for v in distinct],
            }
        ],
    )


def series(body: dict[str, Any], name: str, **dims: str) -> list[float | None]:
    found = [s for s in body["series"] if s["name"] == name and s["dimensions"] == dims]
    assert len(found) == 1, [(s["name"], s["dimensions"]) for s in body["series"]]
    return found[0]["values"]


WINDOW = {"start": "2026-11-21T11:50:00Z", "end": "2026-11-21T11:55:00Z"}


def test_lateness_percentiles_by_band_and_total(metrics_api: ApiClient) -> None:
    svc = {"service": "tickwork"}
    put(metrics_api, "Tickwork", "StartLatenessMs", svc, T0 + timedelta(seconds=5), [float(v) for v in range(1, 101)])
    put(metrics_api, "Tickwork", "StartLatenessMs", {**svc, "band": "high"}, T0 + timedelta(seconds=5), [10.0, 30.0])
    put(metrics_api, "Tickwork", "StartLatenessMs", svc, T0 + timedelta(minutes=2, seconds=1), [7.0])

    reply = metrics_api.get("/v1/metrics", query={"names": "lateness_p50,lateness_p99", **WINDOW}, identity=ADMIN)

    assert reply.status == 200, reply.text
    body = reply.json
    assert body["start"] == "2026-11-21T11:50:00Z"
    assert body["end"] == "2026-11-21T11:55:00Z"
    assert body["period"] == 60
    assert series(body, "lateness_p50") == [50.0, None, 7.0, None, None]
    assert series(body, "lateness_p99") == [99.0, None, 7.0, None, None]
    assert series(body, "lateness_p99", band="high") == [30.0, None, None, None, None]
    assert series(body, "lateness_p50", band="low") == [None] * 5
    first = body["series"][0]
    assert first["timestamps"] == [f"2026-11-21T11:5{m}:00Z" for m in range(5)]
    assert first["label"] == "Start lateness p50"
    assert first["unit"] == "Milliseconds"


def test_failure_rate_and_counts_by_outcome(metrics_api: ApiClient) -> None:
    svc = {"service": "tickwork"}
    put(metrics_api, "Tickwork", "RunsSucceeded", svc, T0, [1.0] * 3)
    put(metrics_api, "Tickwork", "RunsFailed", svc, T0 + timedelta(seconds=30), [1.0])
    put(metrics_api, "Tickwork", "RunsSucceeded", svc, T0 + timedelta(minutes=1), [1.0, 1.0])  # no failure: 0 %
    put(metrics_api, "Tickwork", "RunsRetried", svc, T0 + timedelta(minutes=3), [1.0, 1.0])
    put(metrics_api, "Tickwork", "RunsDeferred", {**svc, "Reason": "rate_limit"}, T0, [1.0])
    put(metrics_api, "Tickwork", "RunsDeferred", {**svc, "Reason": "concurrency_key"}, T0, [1.0, 1.0])

    query = {"names": "runs_succeeded,runs_failed,failure_rate,retries,runs_deferred", **WINDOW}
    body = metrics_api.get("/v1/metrics", query=query, identity=ADMIN).json

    assert series(body, "runs_succeeded") == [3.0, 2.0, None, None, None]
    assert series(body, "runs_failed") == [1.0, None, None, None, None]
    assert series(body, "failure_rate") == [25.0, 0.0, None, None, None]
    assert series(body, "retries") == [None, None, None, 2.0, None]
    assert series(body, "runs_deferred") == [3.0, None, None, None, None]


def test_queue_lag_and_utilisation_from_aws_metrics(metrics_api: ApiClient) -> None:
    queues = metrics_api.pipeline.resources.queue_urls
    high = queues["high"].rsplit("/", 1)[-1]
    put(metrics_api, "AWS/SQS", "ApproximateNumberOfMessagesVisible", {"QueueName": high}, T0, [4.0, 9.0])
    put(metrics_api, "AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": high}, T0, [12.0])
    put(metrics_api, "AWS/Lambda", "ConcurrentExecutions", {"FunctionName": "tickwork-executor"}, T0, [5.0])
    put(metrics_api, "Tickwork", "DispatchLagMs", {"service": "tickwork"}, T0, [40.0, 250.0])

    query = {"names": "queue_depth,queue_oldest_age,executor_utilisation,tick_dispatch_lag", **WINDOW}
    body = metrics_api.get("/v1/metrics", query=query, identity=ADMIN).json

    assert series(body, "queue_depth", band="high") == [9.0, None, None, None, None]
    assert series(body, "queue_depth", band="low") == [None] * 5
    assert series(body, "queue_oldest_age", band="high")[0] == 12.0
    assert not [s for s in body["series"] if s["name"] == "queue_depth" and s["dimensions"] == {}]
    assert series(body, "executor_utilisation") == [50.0, None, None, None, None]  # 5 of 6 + 2 + 2
    assert series(body, "tick_dispatch_lag")[0] == 250.0


def test_one_get_metric_data_call_for_every_figure(metrics_api: ApiClient) -> None:
    metrics_api.pipeline.calls.clear()

    body = metrics_api.get("/v1/metrics", query=WINDOW, identity=ADMIN).json

    assert metrics_api.pipeline.calls.by_operation() == {"GetMetricData": 1, "ListRoleTags": 1}  # and the caller's
    names = {s["name"] for s in body["series"]}
    assert names == {c["name"] for c in metrics_api.get("/v1/metrics/catalogue").json["items"]}
    assert all(len(s["values"]) == len(s["timestamps"]) == 5 for s in body["series"])


def test_default_range_is_the_last_hour_on_the_period_grid(metrics_api: ApiClient) -> None:
    body = metrics_api.get("/v1/metrics", query={"names": "retries", "period": 300}, identity=ADMIN).json

    assert body["start"] == "2026-11-21T11:00:00Z"
    assert body["end"] == "2026-11-21T12:00:00Z"
    assert len(body["series"][0]["timestamps"]) == 12
    assert body["series"][0]["timestamps"][1] == "2026-11-21T11:05:00Z"


def test_a_tenant_sees_its_own_figures_only(metrics_api: ApiClient) -> None:
    put(metrics_api, "Tickwork", "RunsSucceeded", {"service": "tickwork", "tenant": ACME_TENANT}, T0, [1.0, 1.0])
    put(metrics_api, "Tickwork", "RunsSucceeded", {"service": "tickwork"}, T0, [1.0] * 7)

    mine = metrics_api.get("/v1/metrics", query={"names": "runs_succeeded", **WINDOW}, identity=ACME).json
    other = metrics_api.get("/v1/metrics", query={"names": "runs_succeeded", **WINDOW}, identity=GLOBEX).json
    every = metrics_api.get("/v1/metrics", query=WINDOW, identity=ACME).json

    assert mine["series"] == [
        {**mine["series"][0], "dimensions": {"tenant": ACME_TENANT}, "values": [2.0, None, None, None, None]}
    ]
    assert other["series"][0]["values"] == [None] * 5
    assert {s["name"] for s in every["series"]} == {
        "lateness_p50",
        "lateness_p99",
        "runs_succeeded",
        "runs_failed",
        "runs_skipped",
        "runs_deferred",
        "failure_rate",
        "retries",
    }
    assert all("tenant" in s["dimensions"] for s in every["series"])


@pytest.mark.parametrize(
    "query",
    [
        {"names": "queue_depth"},
        {"names": "executor_utilisation,retries"},
        {"names": "tick_dispatch_lag"},
        {"names": "retries", "tenant": "globex"},
    ],
)
def test_a_tenant_is_refused_system_wide_figures_and_other_tenants(metrics_api: ApiClient, query: dict) -> None:
    metrics_api.pipeline.calls.clear()

    reply = metrics_api.get("/v1/metrics", query=query, identity=ACME)

    assert reply.status == 403, reply.text
    assert metrics_api.pipeline.calls.count("GetMetricData") == 0


def test_an_admin_reads_a_named_tenant(metrics_api: ApiClient) -> None:
    put(metrics_api, "Tickwork", "RunsRetried", {"service": "tickwork", "tenant": ACME_TENANT}, T0, [1.0])

    body = metrics_api.get(
        "/v1/metrics", query={"names": "retries,queue_depth", "tenant": ACME_TENANT, **WINDOW}, identity=ADMIN
    ).json

    assert series(body, "retries", tenant=ACME_TENANT)[0] == 1.0
    assert len([s for s in body["series"] if s["name"] == "queue_depth"]) == 3  # no tenant share: by band


def test_band_filter(metrics_api: ApiClient) -> None:
    body = metrics_api.get(
        "/v1/metrics", query={"names": "lateness_p99,queue_depth,retries", "band": "low", **WINDOW}, identity=ADMIN
    ).json

    assert [(s["name"], s["dimensions"]) for s in body["series"]] == [
        ("lateness_p99", {"band": "low"}),
        ("retries", {}),
        ("queue_depth", {"band": "low"}),
    ]


def test_catalogue(metrics_api: ApiClient) -> None:
    reply = metrics_api.get("/v1/metrics/catalogue", identity=ACME)

    assert reply.status == 200
    items = {i["name"]: i for i in reply.json["items"]}
    assert items["lateness_p99"] == {
        "name": "lateness_p99",
        "label": "Start lateness p99",
        "unit": "Milliseconds",
        "dimensions": ["band", "tenant"],
    }
    assert items["queue_oldest_age"]["unit"] == "Seconds"
    assert items["queue_oldest_age"]["dimensions"] == ["band"]
    assert items["failure_rate"]["unit"] == "Percent"
    assert len(items) == 12


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"names": "lateness_p98"}, "names"),
        ({"names": ","}, "names"),
        ({"period": "30"}, "period"),
        ({"period": "90"}, "period"),
        ({"period": "7200"}, "period"),
        ({"period": "soon"}, "period"),
        ({"start": "yesterday"}, "start"),
        ({"end": "2026-13-01T00:00:00Z"}, "end"),
        ({"start": "2026-11-21T11:00:00"}, "start"),
        ({"start": "2026-11-21T12:00:00Z", "end": "2026-11-21T11:00:00Z"}, "start"),
        ({"start": "2026-11-20T11:00:00Z", "end": "2026-11-21T11:01:00Z"}, "start"),
        ({"band": "urgent"}, "band"),
    ],
)
def test_bad_input_is_422_naming_the_field_and_calls_nothing(
    metrics_api: ApiClient, query: dict[str, str], field: str
) -> None:
    metrics_api.pipeline.calls.clear()

    reply = metrics_api.get("/v1/metrics", query=query, identity=ADMIN)

    assert reply.status == 422, reply.text
    assert field in reply.fields
    assert set(metrics_api.pipeline.calls.by_operation()) <= {"ListRoleTags"}  # the caller's role's tags only


@pytest.mark.parametrize("tenant", ["", "a tenant", "x" * 129])
def test_an_empty_or_malformed_tenant_is_422_naming_it_not_an_empty_cloudwatch_dimension(
    metrics_api: ApiClient, tenant: str
) -> None:
    metrics_api.pipeline.calls.clear()

    for identity in (ADMIN, ACME):
        reply = metrics_api.get("/v1/metrics", query={"tenant": tenant}, identity=identity)

        assert reply.status == 422, reply.text
        assert reply.fields == ["tenant"]
    assert set(metrics_api.pipeline.calls.by_operation()) <= {"ListRoleTags"}  # the caller's role's tags only


def test_a_range_of_exactly_24_hours_is_served(metrics_api: ApiClient) -> None:
    start = datetime(2026, 11, 20, 12, tzinfo=UTC)
    reply = metrics_api.get(
        "/v1/metrics",
        query={"names": "retries", "period": 3600, "start": start.isoformat(), "end": START.isoformat()},
        identity=ADMIN,
    )

    assert reply.status == 200, reply.text
    assert len(reply.json["series"][0]["values"]) == 24


def test_a_runs_emf_output_forwarded_is_what_the_route_serves_and_costs_no_aws_request(
    metrics_api: ApiClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: a job of tenant acme runs (one retry) with metrics on; what the functions print goes through the
    local forwarder into moto; the route serves it back, by band and to the tenant."""
    from tickwork.observability import metrics
    from tickwork_local.aws.emf_forwarding import EmfForwarder

    pipeline = metrics_api.pipeline
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "tickwork")
    job = pipeline.create_job(
        tenant=ACME_TENANT,
        schedule={"at": START + timedelta(seconds=300)},
        payload={"fail_attempts": 1},
        priority=8,
    )
    pipeline.clock.advance(300)
    capsys.readouterr()
    pipeline.calls.clear()
    pipeline.tick()
    pipeline.drain()
    metrics.clear_metrics()
    per_run = pipeline.calls.by_operation()
    printed = capsys.readouterr().out

    assert pipeline.runs_of(job.id)[-1].status.value == "SUCCEEDED"
    assert not [op for op in per_run if op in ("PutMetricData", "PutLogEvents")]  # EMF is a log line, no request
    forwarder = EmfForwarder(pipeline.services.clients.client("cloudwatch"))
    emf_lines = [line for line in printed.splitlines() if forwarder.offer(line)]
    assert len(emf_lines) >= 5
    assert forwarder.flush() >= 1

    # The EMF documents carry the EMF's own timestamp (the wall clock): ask around it.
    now = datetime.now(UTC)
    window = {"start": (now - timedelta(minutes=5)).isoformat(), "end": (now + timedelta(minutes=1)).isoformat()}
    admin = metrics_api.get(
        "/v1/metrics", query={"names": "lateness_p99,retries,runs_succeeded", **window}, identity=ADMIN
    ).json
    mine = metrics_api.get("/v1/metrics", query={"names": "retries,runs_succeeded", **window}, identity=ACME).json

    assert [v for v in series(admin, "lateness_p99", band="high") if v is not None]
    assert [v for v in series(admin, "lateness_p99", band="low") if v is not None] == []
    assert sum(v or 0 for v in series(admin, "retries")) == 1.0
    assert sum(v or 0 for v in series(mine, "retries", tenant=ACME_TENANT)) == 1.0
    assert sum(v or 0 for v in series(mine, "runs_succeeded", tenant=ACME_TENANT)) == 1.0


def test_metrics_route_reads_the_environment_once_not_per_request(
    metrics_api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    for settings in (TelemetryNames, MetricsSettings):
        read = settings.from_env.__func__  # type: ignore[attr-defined]

        def counted(cls: type, env: Any = None, _read: Any = read) -> Any:
            reads.append(cls.__name__)
            return _read(cls, env)

        monkeypatch.setattr(settings, "from_env", classmethod(counted))

    for _ in range(3):
        assert metrics_api.get("/v1/metrics", query={"names": "retries", **WINDOW}, identity=ADMIN).status == 200

    assert sorted(reads) == ["MetricsSettings", "TelemetryNames"]  # once, for the first request
