"""Tables for people, JSON for programs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel


def plain(value: Any) -> Any:
    """An answer of the typed client as the API sent it: a model as its JSON (the API's field names, and the nulls
    the API sends), in lists and mappings too."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def as_json(value: Any) -> str:
    return json.dumps(plain(value), indent=2, sort_keys=False)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def schedule_text(schedule: dict[str, Any]) -> str:
    if schedule.get("at"):
        text = f"at {schedule['at']}"
    elif schedule.get("cron"):
        text = f"cron {schedule['cron']}"
        if schedule.get("timezone") not in (None, "UTC"):
            text += f" ({schedule['timezone']})"
    else:
        text = f"every {schedule.get('rate')}"
    return text


TENANT_COLUMN: tuple[str, Callable[[dict[str, Any]], Any]] = ("TENANT", lambda item: item["tenant"])
JOB_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("ID", lambda j: j["id"]),
    ("NAME", lambda j: j["name"]),
    ("TYPE", lambda j: j["type"]),
    ("STATE", lambda j: j["state"]),
    ("PRIORITY", lambda j: j["priority"]),
    ("SCHEDULE", lambda j: schedule_text(j["schedule"])),
    ("NEXT RUN", lambda j: j.get("next_run_at")),
]


def duration_text(ms: int | float | None) -> str | None:
    """A duration in its two largest units, as people read one: `412 ms`, `12.6 s`, `4m 12s`, `3h 29m`, `3d 2h`."""
    if ms is None:
        return None
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    if ms < 1000:
        return f"{sign}{ms:.0f} ms"
    if ms < 60_000:
        return f"{sign}{ms / 1000:.1f} s"
    seconds = int(ms // 1000)
    for big, big_unit, small, small_unit in ((86400, "d", 3600, "h"), (3600, "h", 60, "m"), (60, "m", 1, "s")):
        if seconds >= big:
            return f"{sign}{seconds // big}{big_unit} {seconds % big // small}{small_unit}"
    return None  # pragma: no cover - seconds >= 60 here


def run_status_text(run: dict[str, Any]) -> str:
    """The status, with a skip's reason beside it: `SKIPPED (paused)`."""
    status = str(run["status"])
    return f"{status} ({run['skip_reason']})" if run.get("skip_reason") else status


def progress_line(run: dict[str, Any]) -> str:
    """A run's status and its last progress report, on one line: `RUNNING 42% exporting page 5 (at ...)`."""
    parts = [run_status_text(run)]
    progress = run.get("progress") or {}
    if progress.get("fraction") is not None:
        parts.append(f"{progress['fraction'] * 100:.0f}%")
    if progress.get("message"):
        parts.append(str(progress["message"]))
    if progress.get("updated_at"):
        parts.append(f"(at {progress['updated_at']})")
    return " ".join(parts)


def deferred_text(run: dict[str, Any]) -> str | None:
    """How often a limit held the run back without using an attempt, and why the last time: `3 (rate_limit)`."""
    if not run.get("deferred"):
        return None
    return f"{run['deferred']} ({run['deferred_reason']})" if run.get("deferred_reason") else str(run["deferred"])


RUN_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("ID", lambda r: r["id"]),
    ("STATUS", run_status_text),
    ("SCHEDULED FOR", lambda r: r["scheduled_for"]),
    ("ATTEMPTS", lambda r: r.get("attempts")),
    ("LATE", lambda r: duration_text(r.get("lateness_ms"))),
    ("DEFERRED", deferred_text),
    ("FINISHED", lambda r: r.get("finished_at")),
    ("ERROR", lambda r: (r.get("error") or {}).get("message")),
]

DLQ_COLUMNS = [
    *RUN_COLUMNS,
    ("RETRY", lambda r: "yes" if (r.get("retry") or {}).get("retryable", True) else r["retry"].get("reason")),
]

BULK_JOB_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("JOB", lambda r: r["job_id"]),
    ("OUTCOME", lambda r: r["outcome"]),
    ("STATE", lambda r: r.get("state")),
    ("REASON", lambda r: r.get("reason")),
]

BATCH_CREATE_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("#", lambda r: r["index"]),
    ("OUTCOME", lambda r: r["outcome"]),
    ("JOB", lambda r: (r.get("job") or {}).get("id")),
    ("REASON", lambda r: "; ".join(f"{e['field']}: {e['message']}" for e in r.get("errors") or []) or r.get("detail")),
]

BULK_RUN_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("RUN", lambda r: r["run_id"]),
    ("OUTCOME", lambda r: r["outcome"]),
    ("STATUS", lambda r: r.get("status")),
    ("REASON", lambda r: r.get("message")),
]


def stuck_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """`GET /v1/runs/stuck`'s runs, each with how long it has been past its time (or lease), by the API's clock."""
    as_of = _instant(page["as_of"])
    return [{**run, "for_ms": (as_of - _instant(run["since"])).total_seconds() * 1000} for run in page["items"]]


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


STUCK_RUN_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("ID", lambda r: r["run_id"]),
    ("STATUS", lambda r: r["status"]),
    ("REASON", lambda r: r["reason"]),
    ("SCHEDULED FOR", lambda r: r["scheduled_for"]),
    ("FOR", lambda r: duration_text(r["for_ms"])),
    ("JOB", lambda r: r["job_id"]),
]


PREVIEW_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("AT (UTC)", lambda o: o["at"]),
    ("LOCAL", lambda o: o["local"]),
    ("DST", lambda o: o.get("dst") or ""),
]


def blocked_text(occurrence: dict[str, Any]) -> str:
    """What a calendar or a freeze does to a previewed occurrence: `calendar c... (skip)`, `freeze f... (runs at
    ...)`; empty when nothing blocks it."""
    blocked = occurrence.get("blocked")
    if not blocked:
        return ""
    then = f"runs at {blocked['runs_at']}" if blocked.get("runs_at") else blocked["then"]
    return f"{blocked['reason']} {blocked['by']} ({then})"


# A job's preview: its calendars and the freezes over it may block an occurrence (a schedule's has none).
JOB_PREVIEW_COLUMNS = [*PREVIEW_COLUMNS, ("BLOCKED", blocked_text)]

VARIANT_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("VARIANT", lambda v: v["name"]),
    ("WEIGHT", lambda v: f"{v['weight']}%"),
    ("RUNS", lambda v: v["runs"]),
    ("SUCCESS", lambda v: "" if v["success_rate"] is None else f"{v['success_rate']:.1%}"),
    ("P50 MS", lambda v: v["duration_p50_ms"] if v["duration_p50_ms"] is not None else ""),
    ("P95 MS", lambda v: v["duration_p95_ms"] if v["duration_p95_ms"] is not None else ""),
    ("ATTEMPTS/RUN", lambda v: v["attempts_per_run"] if v["attempts_per_run"] is not None else ""),
    ("USD/RUN", lambda v: "" if v["cost_per_run_usd"] is None else f"{v['cost_per_run_usd']:.8f}"),
]

LOG_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("AT (UTC)", lambda line: line["at"]),
    ("ATTEMPT", lambda line: line["attempt"]),
    ("LEVEL", lambda line: line["level"]),
    ("MESSAGE", lambda line: line["message"]),
    ("FIELDS", lambda line: json.dumps(line["fields"], separators=(",", ":")) if line.get("fields") else ""),
]


def steps_text(steps: Any) -> str:
    """A workflow's steps as the DAG they form (`a; b <- a; d <- b, c`), or a workflow run's steps (or its
    compensations, in the order they run) as their states (`a SUCCEEDED; d SKIPPED (upstream_failed)`)."""
    if isinstance(steps, list):
        return "; ".join(s["id"] + (f" <- {', '.join(s['depends_on'])}" if s.get("depends_on") else "") for s in steps)
    if isinstance(steps, dict):
        return "; ".join(
            f"{sid} {s['status']}" + (f" ({s['skip_reason']})" if s.get("skip_reason") else "")
            for sid, s in steps.items()
        )
    return _cell(steps)


WORKFLOW_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("ID", lambda w: w["id"]),
    ("NAME", lambda w: w["name"]),
    ("STATE", lambda w: w["state"]),
    ("STEPS", lambda w: len(w["steps"])),
    ("SCHEDULE", lambda w: schedule_text(w["schedule"])),
    ("NEXT RUN", lambda w: w.get("next_run_at")),
]

WORKFLOW_RUN_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("ID", lambda r: r["id"]),
    ("STATUS", lambda r: r["status"]),
    ("SCHEDULED FOR", lambda r: r["scheduled_for"]),
    ("FINISHED", lambda r: r.get("finished_at")),
    ("STEPS", lambda r: steps_text(r["steps"]) if r.get("steps") else r.get("skip_reason")),
]


AUDIT_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("AT", lambda r: r["at"]),
    ("ACTOR", lambda r: r["actor"]["display"]),
    ("TENANT", lambda r: r["tenant"]),
    ("ACTION", lambda r: r["action"]),
    ("RESOURCE", lambda r: r["resource"]["id"]),
    ("CHANGED", lambda r: ", ".join(r["changes"]) or None),
]


def items_table(items: Sequence[dict[str, Any]], columns: list[tuple[str, Callable[[dict[str, Any]], Any]]]) -> str:
    if not items:
        return "(none)"
    return table([[get(item) for _, get in columns] for item in items], [name for name, _ in columns])


def outcomes_text(outcomes: dict[str, int]) -> str:
    """Attempt records by outcome, the most first: `28 yielded, 1 succeeded`."""
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items(), key=lambda pair: -pair[1]))


def attempts_text(history: list[dict[str, Any]]) -> str:
    """A run's kept attempt records, collapsed to one line: `20 kept: 19 yielded, 1 succeeded`."""
    outcomes: dict[str, int] = {}
    for attempt in history:
        outcome = str(attempt.get("outcome") or "running or lost")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return f"{len(history)} kept: {outcomes_text(outcomes)}" if history else "none"


def earlier_attempts_text(earlier: dict[str, Any]) -> str:
    """The summary of the records folded out of a run's history: `10 earlier (attempts 1-1): 10 yielded, 3m 20s
    handler time, from <first start>`."""
    attempts = f"attempts {earlier['first_attempt']}-{earlier['last_attempt']}"
    handler = duration_text(earlier["handler_ms"])
    return (
        f"{earlier['records']} earlier ({attempts}): {outcomes_text(earlier['outcomes'])}, {handler} handler time, "
        f"from {earlier['first_started_at']}"
    )


def record(item: dict[str, Any]) -> str:
    """One job, run, workflow or workflow run, a field per line; a run's attempt history collapsed (`--output
    json` has every record)."""
    rows = []
    for key, value in item.items():
        shown = value
        if key == "schedule" and isinstance(value, dict):
            shown = schedule_text(value)
        elif key in ("steps", "compensations"):
            shown = steps_text(value)
        elif key in ("handler_ms", "wall_ms") and value is not None:
            shown = f"{duration_text(value)} ({value})"
        elif key == "attempt_history" and isinstance(value, list):
            shown = attempts_text(value)
        elif key == "earlier_attempts" and isinstance(value, dict):
            shown = earlier_attempts_text(value)
        rows.append([key, shown])
    return table(rows, ["FIELD", "VALUE"])
