"""The metrics catalogue (pure): the queries each name needs, the grid, the caller's view and bad input; and the
local emulator's percentile and metric math (tickwork_local.aws.moto_cloudwatch)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tickwork.control.metrics_catalogue import (
    CATALOGUE,
    MAX_QUERIES,
    MetricsContext,
    MetricsPlan,
    assemble,
    for_caller,
    metrics_request,
    plan,
)
from tickwork.model.errors import Forbidden, InvalidInput
from tickwork.model.policies import Band
from tickwork.settings import MetricsSettings
from tickwork_local.aws.moto_cloudwatch import ExpressionError, evaluate_expression, percentile

NOW = datetime(2026, 11, 23, 9, 0, 30, tzinfo=UTC)
CONTEXT = MetricsContext(
    namespace="Tickwork",
    service="tickwork",
    queue_names={Band.HIGH: "q-high", Band.NORMAL: "q-normal", Band.LOW: "q-low"},
    executor_function="tickwork-executor",
    executor_concurrency=75,
)


def request(**kwargs):
    values = {"names": None, "period": 60, "start": None, "end": None, "now": NOW} | kwargs
    return metrics_request(**values)


def test_default_range_is_the_hour_before_now_aligned_down_to_the_period():
    got = request()
    assert got.start == datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    assert got.end == NOW
    grid = got.grid()
    assert len(grid) == 61
    assert grid[-1] == datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    assert got.names == tuple(CATALOGUE)


def test_grid_steps_by_the_period_from_the_aligned_start():
    got = request(
        period=300, start=datetime(2026, 11, 23, 8, 7, tzinfo=UTC), end=datetime(2026, 11, 23, 8, 30, tzinfo=UTC)
    )
    assert [t.minute for t in got.grid()] == [5, 10, 15, 20, 25]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"names": "nope"}, "names"),
        ({"names": " , "}, "names"),
        ({"period": 0}, "period"),
        ({"period": 120 + 30}, "period"),
        ({"period": 3660}, "period"),
        ({"start": datetime(2026, 11, 23, 8, 0)}, "start"),
        ({"end": datetime(2026, 11, 23, 8, 0)}, "end"),
        ({"start": NOW, "end": NOW}, "start"),
        ({"start": NOW - timedelta(hours=24, seconds=1), "end": NOW}, "start"),
        ({"end": datetime(1, 1, 1, tzinfo=UTC)}, "end"),
        ({"start": datetime(9999, 12, 31, tzinfo=UTC)}, "start"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(InvalidInput) as refused:
        request(**kwargs)
    assert [e.field for e in refused.value.errors] == [field]


def test_names_keep_catalogue_order_and_drop_repeats():
    assert request(names="retries,lateness_p99,retries").names == ("lateness_p99", "retries")


def test_lateness_is_a_percentile_of_the_emf_metric_in_total_and_per_band():
    built = plan(request(names="lateness_p99"), CONTEXT)
    assert [s.dimensions for s in built.series] == [{}, {"band": "high"}, {"band": "normal"}, {"band": "low"}]
    first = built.queries[0]["MetricStat"]
    assert first["Stat"] == "p99"
    assert first["Metric"] == {
        "Namespace": "Tickwork",
        "MetricName": "StartLatenessMs",
        "Dimensions": [{"Name": "service", "Value": "tickwork"}],
    }
    assert built.queries[1]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "band", "Value": "high"},
        {"Name": "service", "Value": "tickwork"},
    ]


def test_failure_rate_is_metric_math_over_two_hidden_queries():
    built = plan(request(names="failure_rate"), CONTEXT)
    hidden = [q for q in built.queries if not q["ReturnData"]]
    assert [q["MetricStat"]["Metric"]["MetricName"] for q in hidden] == ["RunsFailed", "RunsSucceeded"]
    (shown,) = [q for q in built.queries if q["ReturnData"]]
    assert shown["Expression"] == "100 * FILL(q0, 0) / (FILL(q1, 0) + FILL(q0, 0))"
    assert built.series[0].query_id == shown["Id"]


def test_utilisation_divides_in_flight_by_the_allowed_concurrency():
    built = plan(request(names="executor_utilisation"), CONTEXT)
    assert built.queries[0]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "FunctionName", "Value": "tickwork-executor"}
    ]
    assert built.queries[1]["Expression"] == "100 * q0 / 75"


def test_utilisation_without_its_settings_is_a_series_without_data():
    unset = MetricsContext("Tickwork", "tickwork", CONTEXT.queue_names)
    got = request(names="executor_utilisation")
    built = plan(got, unset)
    assert built.queries == []
    (series,) = assemble(got, built, {})
    assert series.values == [None] * 61


def test_queue_figures_are_per_band_queue_without_a_total():
    built = plan(request(names="queue_depth,queue_oldest_age"), CONTEXT)
    assert [(s.name, s.dimensions) for s in built.series][:3] == [
        ("queue_depth", {"band": "high"}),
        ("queue_depth", {"band": "normal"}),
        ("queue_depth", {"band": "low"}),
    ]
    assert built.queries[3]["MetricStat"]["Metric"] == {
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateAgeOfOldestMessage",
        "Dimensions": [{"Name": "QueueName", "Value": "q-high"}],
    }


def test_runs_deferred_total_sums_every_reason():
    built = plan(request(names="runs_deferred"), CONTEXT)
    reasons = [q["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for q in built.queries if "MetricStat" in q]
    assert len(reasons) == len(set(reasons)) >= 4
    assert built.queries[-1]["Expression"].count("FILL(") == len(reasons)


def test_every_figure_fits_one_call():
    built = plan(request(), CONTEXT)
    assert len(built.queries) <= MAX_QUERIES
    assert len({q["Id"] for q in built.queries}) == len(built.queries)


def test_a_tenant_gets_its_own_share_of_every_figure_it_has_one_of():
    got = for_caller(request(), tenant="acme", admin=False, names_given=False)
    assert got.tenant == "acme"
    assert all(not CATALOGUE[n].system_wide for n in got.names)
    built = plan(got, CONTEXT)
    assert all(s.dimensions == {"tenant": "acme"} for s in built.series)


def test_a_tenant_naming_a_system_wide_figure_or_another_tenant_is_refused():
    with pytest.raises(Forbidden):
        for_caller(request(names="retries,queue_depth"), tenant="acme", admin=False, names_given=True)
    with pytest.raises(Forbidden):
        for_caller(request(names="retries", tenant="globex"), tenant="acme", admin=False, names_given=True)


def test_an_admin_sees_what_it_asks_for():
    asked = request(names="queue_depth", tenant="acme")
    assert for_caller(asked, tenant="ops", admin=True, names_given=True) == asked


def test_assemble_puts_values_on_the_grid_and_nulls_elsewhere():
    got = request(names="retries", start=NOW - timedelta(minutes=3))
    built = plan(got, CONTEXT)
    minute = int(got.start.timestamp())
    (series,) = assemble(got, built, {"q0": {minute: 2.0, minute + 120: float("nan")}})
    assert series.values == [2.0, None, None, None]
    assert len(series.timestamps) == 4


def test_too_many_queries_are_refused_naming_names(monkeypatch):
    monkeypatch.setattr("tickwork.control.metrics_catalogue.MAX_QUERIES", 3)
    with pytest.raises(InvalidInput) as refused:
        plan(request(), CONTEXT)
    assert refused.value.errors[0].field == "names"
    assert isinstance(MetricsPlan().next_id(), str)


@pytest.mark.parametrize(
    ("value", "total"),
    [("50,20,5", 75), (" 6 ,2,2", 10), ("", None)],
)
def test_executor_concurrency_is_the_sum_of_the_event_sources(value, total):
    assert MetricsSettings.from_env({"EXECUTOR_CONCURRENCY": value}).executor_concurrency == total


@pytest.mark.parametrize("value", ["50,x", "0", "-1,2"])
def test_executor_concurrency_must_be_positive_integers(value):
    with pytest.raises(ValueError, match="EXECUTOR_CONCURRENCY"):
        MetricsSettings.from_env({"EXECUTOR_CONCURRENCY": value})


# ------------------------------------------------------------------ the local emulator's statistics


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 99.5) == 100.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


T = [datetime(2026, 11, 23, 8, m, tzinfo=UTC) for m in range(3)]


def test_metric_math_point_by_point_with_fill_and_no_point_for_division_by_zero():
    series = {"f": {T[0]: 1.0}, "s": {T[0]: 3.0, T[1]: 2.0}, "x": {T[2]: 5.0}}
    rate = evaluate_expression("100 * FILL(f, 0) / (FILL(s, 0) + FILL(f, 0))", series)
    assert rate == {T[0]: 25.0, T[1]: 0.0}
    assert evaluate_expression("f + s", series) == {T[0]: 4.0}  # missing in an operand: missing
    assert evaluate_expression("-(s - 1) * 2", series) == {T[0]: -4.0, T[1]: -2.0}
    assert evaluate_expression("s / 0", series) == {}


@pytest.mark.parametrize("expression", ["SUM(METRICS())", "f +", "unknown * 2", "(f"])
def test_metric_math_it_does_not_know_is_refused(expression):
    with pytest.raises(ExpressionError):
        evaluate_expression(expression, {"f": {T[0]: 1.0}})
