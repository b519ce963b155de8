"""Every field of every API request body can be set from the matching `tickwork` command, by a flag or by
`--file`: walks the API's OpenAPI document, so a new API field without a CLI path fails here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.test_workflow_routes import DIAMOND

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

JOB_ID, WORKFLOW_ID, WORKFLOW_FILE = "{job_id}", "{workflow_id}", "{workflow_file}"
RUN_ID = "j01m7yzmhg0000000000000000.1795262400000"  # no such run: only what the command sends counts
WORKFLOW_RUN_ID = "{workflow_run_id}"
CALENDAR_ID = "{calendar_id}"
CALENDAR = {"name": "n", "windows": [{"dates": ["2026-12-25"]}]}

# Each operation with a request body, and the command that sends it (ids filled in by the test).
COMMANDS: dict[tuple[str, str], list[str]] = {
    ("POST", "/v1/jobs"): ["jobs", "create"],
    ("PATCH", "/v1/jobs/{job_id}"): ["jobs", "update", JOB_ID],
    ("POST", "/v1/jobs/{job_id}/backfill"): ["jobs", "backfill", JOB_ID],
    ("POST", "/v1/jobs/{job_id}/trigger"): ["jobs", "trigger", JOB_ID],
    ("POST", "/v1/schedules/preview"): ["schedules", "preview"],
    ("POST", "/v1/dlq/redrive"): ["dlq", "redrive"],
    ("POST", "/v1/dead-letters/redrive"): ["dead-letters", "redrive"],
    ("POST", "/v1/regions/failover"): ["regions", "failover"],
    ("POST", "/v1/runs/{run_id}/retry"): ["runs", "retry", RUN_ID],
    ("POST", "/v1/workflows"): ["workflows", "create"],
    ("PATCH", "/v1/workflows/{workflow_id}"): ["workflows", "update", WORKFLOW_ID],
    ("PUT", "/v1/tenants/{tenant}"): ["tenants", "set", "acme"],
    ("POST", "/v1/workflow-runs/{workflow_run_id}/cancel"): ["workflow-runs", "cancel", WORKFLOW_RUN_ID],
    ("POST", "/v1/calendars"): ["calendars", "create"],
    ("PUT", "/v1/calendars/{calendar_id}"): ["calendars", "update", CALENDAR_ID],
    ("POST", "/v1/freezes"): ["freezes", "create"],
    ("POST", "/v1/bulk/jobs"): ["jobs", "pause"],
    ("POST", "/v1/bulk/jobs/create"): ["jobs", "create-batch"],
    ("POST", "/v1/bulk/runs"): ["runs", "retry"],
}

# What a command needs besides the field under test (the body may still be refused: only what is sent counts).
BASE: dict[str, list[str]] = {
    "jobs create": ["--name", "n", "--type", "echo"],
    "jobs backfill": ["--from", "-1h", "--to", "now"],
    "freezes create": ["--reason", "r", "--for", "30m", "--all"],
    "workflows create": ["--file", WORKFLOW_FILE],
}

SCHEDULE_FLAGS = {
    "schedule.at": ["--at", "+1h"],
    "schedule.cron": ["--cron", "0 * * * *"],
    "schedule.rate": ["--rate", "1 hour"],
    "schedule.timezone": ["--cron", "0 * * * *", "--timezone", "Europe/Paris"],
    "schedule.start_at": ["--cron", "0 * * * *", "--start-at", "+1h"],
    "schedule.end_at": ["--cron", "0 * * * *", "--end-at", "+1d"],
}
POLICY_FLAGS = {
    "name": ["--name", "n"],
    "priority": ["--priority", "5"],
    "retry.max_attempts": ["--max-attempts", "3"],
    "retry.backoff_seconds": ["--backoff", "2"],
    "retry.max_backoff_seconds": ["--max-backoff", "9"],
    "timeout_seconds": ["--timeout", "30"],
    "misfire_grace_seconds": ["--misfire-grace", "60"],
    "tags": ["--tag", "team=data"],
    "calendars": ["--calendar", "c" + "0" * 25],
    "on_blocked": ["--on-blocked", "DEFER"],
}
DEBOUNCE_FLAGS = {
    "debounce.key": ["--debounce", "customer-7=30"],
    "debounce.seconds": ["--debounce", "customer-7=30"],
    "debounce.collect": ["--debounce", "customer-7=30", "--debounce-collect"],
}
JOB_FLAGS = {
    **SCHEDULE_FLAGS,
    **POLICY_FLAGS,
    "type": ["--type", "echo"],
    "payload": ["--payload", "{}"],
    "overlap": ["--overlap", "SKIP"],
    "catchup": ["--catchup", "ALL"],
    "circuit_breaker.failure_threshold": ["--failure-threshold", "3"],
    "circuit_breaker.cooldown_seconds": ["--cooldown-seconds", "60"],
    "circuit_breaker.max_cooldown_seconds": ["--max-cooldown-seconds", "600"],
    "jitter_seconds": ["--jitter-seconds", "5"],
    "start_precision": ["--start-precision", "precise"],
    "dispatch_order": ["--dispatch-order", "sjf"],
    "concurrency.key": ["--concurrency", "db=2"],
    "concurrency.limit": ["--concurrency", "db=2"],
    "rate_limit.key": ["--rate-limit", "partner=5/s"],
    "rate_limit.per_second": ["--rate-limit", "partner=5/s"],
    "rate_limit.per_minute": ["--rate-limit", "partner=5/min"],
    "ordering.key": ["--ordering", "ledger"],
    "ordering.on_failure": ["--ordering", "ledger", "--ordering-on-failure", "continue"],
    **DEBOUNCE_FLAGS,
    "max_run_seconds": ["--max-run-seconds", "600"],
    "deadline.within_seconds": ["--deadline", "30m"],
    "deadline.on_miss": ["--deadline", "30m", "--on-deadline-miss", "CANCEL"],
    "notify": ["--notify", "Run Failed"],
    "variants": ["--variants", '[{"name": "v2", "weight": 10}]'],
}
# Commands where every field has a flag: a job's fields are set one by one from a shell (--file is for the rest).
EVERY_FIELD_A_FLAG = {"jobs create", "jobs update"}
FLAGS: dict[str, dict[str, list[str]]] = {
    "jobs create": JOB_FLAGS,
    "jobs update": JOB_FLAGS,
    "jobs backfill": {"from": ["--from", "-1h"], "to": ["--to", "now"], "max_runs": ["--max-runs", "5"]},
    "jobs trigger": {"payload": ["--payload", "{}"], **DEBOUNCE_FLAGS},
    "schedules preview": {**SCHEDULE_FLAGS, "count": ["--count", "3"], "from": ["--from", "now"]},
    "dlq redrive": {"run_ids": ["r1"], "all": ["--all"]},
    "dead-letters redrive": {"bands": ["--band", "low"]},
    "regions failover": {"to": ["--to", "us-east-1"], "force": ["--to", "us-east-1", "--force"]},
    "runs retry": {
        "from_checkpoint": ["--start-over"],
        "payload": ["--payload", "{}"],
        # POST /v1/bulk/runs: `runs retry` without a run id, by --run or a runs search's filters
        "action": ["--status", "FAILED"],
        "run_ids": ["--run", "r1"],
        "filters.status": ["--status", "FAILED"],
        "filters.job_id": ["--job", "j1"],
        "filters.workflow_id": ["--workflow", "w1"],
        "filters.type": ["--type", "echo"],
        "filters.tag": ["--tag", "team=payments"],
        "filters.trigger": ["--trigger", "manual"],
        "filters.error_type": ["--error-type", "Timeout"],
        "filters.from": ["--from", "-1h"],
        "filters.to": ["--to", "now"],
        "filters.on": ["--from", "-1h", "--ended"],
        "cursor": ["--status", "FAILED", "--cursor", "c"],
    },
    "workflows create": {**SCHEDULE_FLAGS, **POLICY_FLAGS},
    "workflows update": {**SCHEDULE_FLAGS, **POLICY_FLAGS},
    "workflow-runs cancel": {"compensate": ["--compensate"]},
    "jobs pause": {
        "action": ["--all"],
        "selector.tags": ["--tag", "team=payments"],
        "selector.job_ids": ["--job", "j1"],
        "selector.all": ["--all"],
        "cursor": ["--all", "--cursor", "c"],
    },
    "freezes create": {
        "selector.tags": ["--tag", "team=payments"],
        "selector.job_ids": ["--job", "j1"],
        "selector.all": ["--all"],
        "from": ["--from", "now"],
        "until": ["--until", "+1h"],
        "for_seconds": ["--for", "30m"],
        "reason": ["--reason", "deploy"],
        "on_blocked": ["--on-blocked", "DEFER"],
        "every_tenant": ["--every-tenant"],
    },
    "tenants set": {
        "weight": ["--weight", "2"],
        "max_active_jobs": ["--max-active-jobs", "10"],
        "max_runs_per_minute": ["--max-runs-per-minute", "10"],
        "max_concurrent_runs": ["--max-concurrent-runs", "10"],
        "dispatch_order": ["--dispatch-order", "sjf"],
    },
}
# What --file must hold besides the field under test for the command to send it.
FILE_BASE: dict[str, dict[str, Any]] = {
    "jobs create": {"name": "n", "type": "echo"},
    "workflows create": {k: v for k, v in DIAMOND.items() if k in ("name", "schedule", "steps")},
    "calendars create": CALENDAR,
    "calendars update": CALENDAR,
}


def _document() -> dict[str, Any]:
    from api.app import openapi_document

    return json.loads(openapi_document())


def _leaves(schema: dict[str, Any], schemas: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """The dotted paths of a body's fields: into nested objects with declared fields (schedule, retry, ...);
    a free-form object (payload, tags) or a list (steps) is one field."""
    for name, prop in schema.get("properties", {}).items():
        target = _object_of(prop, schemas)
        if target is not None and target.get("properties"):
            yield from _leaves(target, schemas, f"{prefix}{name}.")
        else:
            yield prefix + name


def _object_of(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any] | None:
    for branch in [schema, *schema.get("anyOf", [])]:
        if "$ref" in branch:
            return schemas[branch["$ref"].rsplit("/", 1)[-1]]  # type: ignore[no-any-return]
    return schema if schema.get("type") == "object" else None


def _request_bodies() -> Iterator[tuple[str, str, dict[str, Any]]]:
    document = _document()
    schemas = document["components"]["schemas"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" in content:
                body = _object_of(content["application/json"]["schema"], schemas)
                assert body is not None, (method, path)
                yield method.upper(), path, {"fields": list(_leaves(body, schemas))}


def _has(body: Any, path: str) -> bool:
    for part in path.split("."):
        if not isinstance(body, dict) or part not in body:
            return False
        body = body[part]
    return True


def _nested(path: str, value: Any) -> dict[str, Any]:
    for part in reversed(path.split(".")):
        value = {part: value}
    return value  # type: ignore[no-any-return]


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def test_every_api_request_field_is_reachable_from_the_cli(cli, tmp_path):
    job = cli.json("jobs", "create", "--name", "probe", "--type", "echo", "--cron", "0 * * * *")
    workflow_file = _write(tmp_path / "w.json", DIAMOND)
    workflow = cli.json("workflows", "create", "--file", workflow_file)
    calendar = cli.json("calendars", "create", "--file", _write(tmp_path / "c.json", CALENDAR))
    workflow_run_id = f"{workflow['id']}.1795262400000.m"  # the command's body is what counts, not the answer
    ids = {
        JOB_ID: job["id"],
        WORKFLOW_ID: workflow["id"],
        WORKFLOW_FILE: workflow_file,
        WORKFLOW_RUN_ID: workflow_run_id,
        CALENDAR_ID: calendar["id"],
    }

    def sent_by(argv: list[str], method: str, template: str) -> Any:
        """What the command sent to the operation, or None when it sent nothing there."""
        cli.transport.sent.clear()
        cli(*argv)
        wanted = template.format(
            job_id=job["id"],
            workflow_id=workflow["id"],
            tenant="acme",
            workflow_run_id=workflow_run_id,
            run_id=RUN_ID,
            calendar_id=calendar["id"],
        )
        for sent_method, url, _, body in cli.transport.sent:
            if sent_method == method and url.endswith(wanted) and body is not None:
                return json.loads(body)
        return None

    unreachable, no_command, no_flag = [], [], []
    for method, path, body in _request_bodies():
        if (method, path) not in COMMANDS:
            no_command.append(f"{method} {path}")
            continue
        command = [ids.get(a, a) for a in COMMANDS[(method, path)]]
        name = " ".join(command[:2])
        for field in body["fields"]:
            flag = FLAGS.get(name, {}).get(field)
            if flag is None and name in EVERY_FIELD_A_FLAG:
                no_flag.append(f"{name}: {field}")
            if flag is not None:
                base = [ids.get(a, a) for a in BASE.get(name, [])]
                sent = sent_by([*command, *base, *flag], method, path)
            else:
                content = _merge(FILE_BASE.get(name, {}), _nested(field, "probe"))
                sent = sent_by([*command, "--file", _write(tmp_path / "body.json", content)], method, path)
            if sent is None or not _has(sent, field):
                unreachable.append(f"{name}: {field} ({'flag ' + flag[0] if flag else '--file'})")
    assert no_command == [], "API operations with a request body that no CLI command sends"
    assert unreachable == [], f"API request fields the CLI cannot set: {unreachable}"
    assert no_flag == [], "a job's fields that only --file sets"


def _write(path: Any, content: Any) -> str:
    path.write_text(json.dumps(content))
    return str(path)
