"""The template's alarms, dashboard widgets, permission and settings for the figures of GET /v1/metrics
(docs/observability.md): executor utilisation, retries, queue lag per band, lateness by band."""

from __future__ import annotations

from template_support import as_list, dashboard_json, iam_statements
from tickwork.settings import MetricsSettings


def _props(template, logical_id):
    return template["Resources"][logical_id]["Properties"]


def test_the_api_may_read_metrics_and_nothing_else_may(template):
    readers = [
        (role, statement)
        for role, statement in iam_statements(template)
        if "cloudwatch:GetMetricData" in as_list(statement["Action"])
    ]
    assert [role for role, _ in readers] == ["ApiRole"]
    assert as_list(readers[0][1]["Action"]) == ["cloudwatch:GetMetricData"]


def test_executor_utilisation_alarm_is_in_flight_against_the_allowed_concurrency(template):
    alarm = _props(template, "ExecutorUtilisationAlarm")
    queries = {q["Id"]: q for q in alarm["Metrics"]}
    metric = queries["inflight"]["MetricStat"]["Metric"]
    assert (metric["Namespace"], metric["MetricName"]) == ("AWS/Lambda", "ConcurrentExecutions")
    assert metric["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "ExecutorFunction"}}]
    assert queries["inflight"]["MetricStat"]["Stat"] == "Maximum"
    assert queries["inflight"]["ReturnData"] is False
    expression = queries["utilisation"]["Expression"]["Fn::Sub"]
    assert expression == "100 * inflight / (${HighConcurrency} + ${NormalConcurrency} + ${LowConcurrency})"
    assert alarm["Threshold"] == {"Ref": "ExecutorUtilisationAlarmPercent"}
    assert template["Parameters"]["ExecutorUtilisationAlarmPercent"]["Default"] == 90


def test_retries_alarm(template):
    alarm = _props(template, "RetriesAlarm")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("Tickwork", "RunsRetried", "Sum")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "tickwork"}]
    assert alarm["Threshold"] == {"Ref": "RetriesAlarmCount"}
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 3


def test_dashboard_widgets_for_lateness_by_band_utilisation_retries_and_queue_lag(template):
    body = dashboard_json(_props(template, "Dashboard")["DashboardBody"])
    titles = {w["properties"].get("title"): w["properties"] for w in body["widgets"]}
    by_band = titles["Start lateness p99 by band (ms)"]["metrics"]
    assert [row[3] for row in by_band] == ["high", "normal", "low"]
    assert all(row[:3] == ["Tickwork", "StartLatenessMs", "band"] for row in by_band)
    utilisation = titles["Executor utilisation (% of allowed concurrency)"]["metrics"]
    assert utilisation[1][0]["expression"] == (
        "100 * inflight / (<HighConcurrency> + <NormalConcurrency> + <LowConcurrency>)"
    )
    retries = titles["Retries and failure rate"]["metrics"]
    assert retries[0][1] == "RunsRetried"
    assert "FILL(failed, 0)" in retries[-1][0]["expression"]
    lag = titles["Queue lag per band: oldest message (s) and depth"]["metrics"]
    assert {(row[1], row[3]) for row in lag} == {
        (metric, f"<{band}Queue.QueueName>")
        for metric in ("ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesVisible")
        for band in ("High", "Normal", "Low")
    }


def test_the_api_environment_defaults_are_valid_metrics_settings(template):
    parameters = template["Parameters"]
    concurrency = ",".join(str(parameters[f"{b}Concurrency"]["Default"]) for b in ("High", "Normal", "Low"))
    settings = MetricsSettings.from_env(
        {"EXECUTOR_FUNCTION_NAME": "tickwork-executor", "EXECUTOR_CONCURRENCY": concurrency}
    )
    assert settings.executor_concurrency == 75
