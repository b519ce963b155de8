"""The request bodies' curated examples in the OpenAPI document: what Swagger UI's "Try it out" sends, each one
valid as it stands (tests/api/test_openapi_examples.py sends them all)."""

from __future__ import annotations

from typing import Any

# Without its own examples, Swagger UI builds one from the schema: a schedule with at, cron and rate together,
# which the API refuses. Each body's first example is the one "Try it out" starts from.

JOB_SPEC = {
    "cron-in-a-zone": (
        "A cron in a time zone: 02:30 Paris time every night (the DST gap in March runs it at 03:00)",
        {
            "name": "nightly-report",
            "type": "echo",
            "schedule": {"cron": "30 2 * * *", "timezone": "Europe/Paris"},
            "payload": {"report": "daily-sales"},
            "priority": 7,
            "retry": {"max_attempts": 5, "backoff_seconds": 30},
            "tags": {"team": "data"},
        },
    ),
    "one-shot": (
        "Once, at an instant",
        {
            "name": "send-welcome-email",
            "type": "echo",
            "schedule": {"at": "2030-01-15T09:00:00Z"},
            "payload": {"user": "u-123"},
        },
    ),
    "rate": (
        "Every 5 minutes, skipping an occurrence while the last run is still going",
        {
            "name": "poll-inbox",
            "type": "echo",
            "schedule": {"rate": "5 minutes"},
            "overlap": "SKIP",
            "timeout_seconds": 120,
        },
    ),
}

JOB_UPDATE = {
    "reschedule": (
        "Move the job to 04:00 New York time",
        {"schedule": {"cron": "0 4 * * *", "timezone": "America/New_York"}},
    ),
    "priority": ("Raise its priority into the high band", {"priority": 8}),
}

WORKFLOW_SPEC = {
    "nightly-etl": (
        "Extract, then transform and check side by side, then load: at 01:00 London time",
        {
            "name": "nightly-etl",
            "schedule": {"cron": "0 1 * * *", "timezone": "Europe/London"},
            "steps": [
                {"id": "extract", "type": "echo", "payload": {"rows": 3}},
                {"id": "transform", "type": "echo", "depends_on": ["extract"]},
                {"id": "check", "type": "echo", "depends_on": ["extract"]},
                {"id": "load", "type": "echo", "depends_on": ["transform", "check"]},
            ],
            "tags": {"team": "data"},
        },
    ),
}

WORKFLOW_UPDATE = {
    "reschedule": ("Run it every 6 hours instead", {"schedule": {"rate": "6 hours"}}),
}

BACKFILL = {
    "one-day": (
        "The job's occurrences on one past day, at most 24 runs",
        {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "max_runs": 24},
    ),
}

REDRIVE = {
    "all": ("Every FAILED run of yours (up to 250 per call)", {"all": True}),
}

DEAD_LETTER_REDRIVE = {
    "all": ("Every band's SQS dead-letter queue", {"bands": ["high", "normal", "low"]}),
}

REGION_FAILOVER = {
    "wait": ("Make us-east-2 active once replication has caught up", {"to": "us-east-2"}),
    "force": (
        "Make us-east-2 active now (the answer names the runs that may run twice)",
        {"to": "us-east-2", "force": True},
    ),
}

SCHEDULE_PREVIEW = {
    "dst-gap": (
        "Sundays 02:30 in Paris through the March change: the last one falls in the gap",
        {"schedule": {"cron": "30 2 * * SUN", "timezone": "Europe/Paris"}, "count": 5, "from": "2027-03-01T00:00:00Z"},
    ),
}

TENANT_SETTINGS = {
    "quotas": (
        "Twice the default weight, at most 500 active jobs and 50 runs at once",
        {"weight": 2, "max_active_jobs": 500, "max_concurrent_runs": 50},
    ),
}

TRIGGER = {
    "own-payload": ("Run it now with a payload of its own", {"payload": {"report": "daily-sales", "rerun": True}}),
    "debounced": (
        "Collapse a burst: triggers with the same key within 30 s make one run, at the window's end",
        {"debounce": {"key": "inbox", "seconds": 30}},
    ),
}

RETRY = {
    "resume": ("Re-queue it; it resumes from its last checkpoint", {}),
    "start-over": ("Re-queue it and start from the beginning", {"from_checkpoint": False}),
    "edited-payload": ("Re-run it with a corrected payload", {"payload": {"hello": "again"}}),
}

BULK_JOBS = {
    "pause-by-tag": ("Pause every job of a team", {"action": "pause", "selector": {"tags": {"team": "data"}}}),
    "resume-named": (
        "Resume the jobs named",
        {"action": "resume", "selector": {"job_ids": ["j01jd2k3m4n5p6q7r8s9t0v1w2"]}},
    ),
}

BATCH_CREATE = {
    "two-jobs": (
        "A nightly report and a one-shot, in one request",
        {"jobs": [JOB_SPEC["cron-in-a-zone"][1], JOB_SPEC["one-shot"][1]]},
    ),
}

BULK_RUNS = {
    "retry-failed-of-a-job": (
        "Retry a job's FAILED runs of the last day",
        {
            "action": "retry",
            "filters": {"job_id": "j01jd2k3m4n5p6q7r8s9t0v1w2", "from": "2030-01-01T00:00:00Z", "on": "ended_at"},
        },
    ),
    "redrive-by-tag": ("Redrive a team's dead-lettered runs", {"action": "redrive", "filters": {"tag": "team=data"}}),
    "retry-named": (
        "Retry the runs named",
        {"action": "retry", "run_ids": ["j01jd2k3m4n5p6q7r8s9t0v1w2.1893456000000"]},
    ),
}

WORKFLOW_RUN_CANCEL = {
    "compensate": ("Cancel it, and undo the steps that succeeded (their compensations)", {"compensate": True}),
}

CALENDAR = {
    "holidays": (
        "No runs on two holidays in London",
        {
            "name": "uk-holidays",
            "timezone": "Europe/London",
            "mode": "exclude",
            "windows": [{"dates": ["2026-12-25", "2026-12-26"]}],
        },
    ),
    "nightly-window": (
        "Runs only in a weeknight maintenance window, 22:00 for 8 hours, in Paris",
        {
            "name": "maintenance",
            "timezone": "Europe/Paris",
            "mode": "include",
            "windows": [{"cron": "0 22 * * 1-5", "duration_minutes": 480}],
        },
    ),
}

FREEZE = {
    "deploy": (
        "Hold the payments team's jobs for 30 minutes during a deploy",
        {"selector": {"tags": {"team": "payments"}}, "for_seconds": 1800, "reason": "deploy 1.42"},
    ),
}


def openapi_examples(named: dict[str, tuple[str, Any]]) -> dict[str, dict[str, Any]]:
    """Named examples as the OpenAPI document's media type gives them: {name: {summary, value}}."""
    return {name: {"summary": summary, "value": value} for name, (summary, value) in named.items()}
