"""The template's alarm on blocked ordering keys (docs/fairness.md, "Ordering keys"), and the due index carrying a
job's ordering key to the claim that queues its runs."""

from __future__ import annotations


def test_the_ordering_alarm_fires_while_a_key_is_blocked(template):
    alarm = template["Resources"]["OrderingKeyBlockedAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Tickwork", "OrderingKeysBlocked")
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == ("Sum", 0, "GreaterThanThreshold")
    assert alarm["Period"] == 300
    assert alarm["TreatMissingData"] == "notBreaching"


def test_ordering_and_overlap_are_projected_into_the_due_index(template):
    (due,) = [
        index
        for index in template["Resources"]["JobsTable"]["Properties"]["GlobalSecondaryIndexes"]
        if index["IndexName"] == "due-index"
    ]
    assert {"ordering", "overlap"} <= set(due["Projection"]["NonKeyAttributes"])
