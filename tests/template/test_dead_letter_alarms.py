"""The two dead letters' alarms (docs/architecture.md, "Dead letters"): a band's SQS dead-letter queue alarms on any
message in it (one the executor could not process); FAILED runs, which are not there, alarm on RunsFailed, the
executor's count of runs that ended FAILED, and the alarm clears by itself once no run fails for a period."""

from __future__ import annotations

from template_support import dashboard_json

BANDS = ("High", "Normal", "Low")


def _props(template, logical_id):
    return template["Resources"][logical_id]["Properties"]


def test_failed_runs_have_an_alarm_of_their_own_on_runs_failed(template):
    alarm = _props(template, "FailedRunsAlarm")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("Tickwork", "RunsFailed", "Sum")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "tickwork"}]
    assert (alarm["Period"], alarm["EvaluationPeriods"]) == (300, 1)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        {"Ref": "FailedRunsAlarmCount"},
        "GreaterThanThreshold",
    )
    assert template["Parameters"]["FailedRunsAlarmCount"]["Default"] == 0
    # No data (no run failed) is not a breach: the alarm goes back to OK once failures stop, whatever the DLQ holds.
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopic"}]
    assert "GET /v1/dlq" in alarm["AlarmDescription"]


def test_each_sqs_dead_letter_queue_keeps_its_alarm_for_messages_not_processed(template):
    for band in BANDS:
        alarm = _props(template, f"{band}DeadLetterQueueAlarm")
        assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
        assert alarm["Dimensions"] == [
            {"Name": "QueueName", "Value": {"Fn::GetAtt": [f"{band}DeadLetterQueue", "QueueName"]}}
        ]
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
        assert "could not process" in alarm["AlarmDescription"]
        assert "/v1/dead-letters/redrive" in alarm["AlarmDescription"]


def test_the_dashboard_shows_failed_runs_and_both_alarms(template):
    body = dashboard_json(_props(template, "Dashboard")["DashboardBody"])
    rows = [m for w in body["widgets"] for m in w["properties"].get("metrics", []) if len(m) >= 4]
    assert ["Tickwork", "RunsFailed", "service", "tickwork"] in [row[:4] for row in rows]
    (alarms,) = [w["properties"]["alarms"] for w in body["widgets"] if w["type"] == "alarm"]
    assert "<FailedRunsAlarm.Arn>" in alarms
    assert {f"<{band}DeadLetterQueueAlarm.Arn>" for band in BANDS} <= set(alarms)
