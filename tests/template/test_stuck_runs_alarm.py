"""The template's stuck-run alarm (docs/operations.md, "Stuck runs"): the tick's StuckRuns and the executor's
StuckRunsHeldBack, over a window no deferral's wait outlasts."""

from __future__ import annotations

from tickwork.executor.outcomes import MAX_MESSAGE_BACKOFF_SECONDS


def test_the_stuck_runs_alarm_counts_runs_a_gate_holds_back_over_a_window_longer_than_any_deferral(template):
    alarm = template["Resources"]["StuckRunsAlarm"]["Properties"]
    queries = {query["Id"]: query for query in alarm["Metrics"]}
    stats = {
        query["MetricStat"]["Metric"]["MetricName"]: (query["MetricStat"]["Stat"], query["MetricStat"]["Period"])
        for query in queries.values()
        if "MetricStat" in query
    }
    assert stats == {"StuckRuns": ("Maximum", 300), "StuckRunsHeldBack": ("Sum", 300)}
    for query in queries.values():
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            assert metric["Namespace"] == "Tickwork"
            assert metric["Dimensions"] == [{"Name": "service", "Value": "tickwork"}]
    (alarmed,) = [query for query in queries.values() if query.get("ReturnData", True)]
    stuck, held_back = (
        next(i for i, q in queries.items() if q.get("MetricStat", {}).get("Metric", {}).get("MetricName") == name)
        for name in ("StuckRuns", "StuckRunsHeldBack")
    )
    assert alarmed["Expression"].replace(" ", "") == f"MAX([{stuck},{held_back}])"
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"
    # A run deferred again after each wait (at most MAX_MESSAGE_BACKOFF_SECONDS on its message) is counted in one
    # of any `EvaluationPeriods` consecutive periods, however its counts fall in them: one is enough to alarm.
    period = 300
    assert alarm["DatapointsToAlarm"] == 1
    assert alarm["EvaluationPeriods"] * period >= MAX_MESSAGE_BACKOFF_SECONDS + period
    assert not {"MetricName", "Period"} & set(alarm)  # the metric math is the alarm's only source
