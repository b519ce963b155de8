"""The template's alarm on suspended jobs (docs/policies.md, "Circuit breaker"), and the due index carrying
what a claim needs of the catch-up policy and the breaker."""

from __future__ import annotations


def test_breaker_alarm_fires_while_any_job_is_suspended(template):
    alarm = template["Resources"]["SuspendedJobsAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Tickwork", "RunsSkippedCircuitOpen")
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == ("Sum", 0, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"


def test_breaker_and_catchup_are_projected_into_the_due_index(template):
    (due,) = [
        index
        for index in template["Resources"]["JobsTable"]["Properties"]["GlobalSecondaryIndexes"]
        if index["IndexName"] == "due-index"
    ]
    assert {"catchup", "breaker"} <= set(due["Projection"]["NonKeyAttributes"])
