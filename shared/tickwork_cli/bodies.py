"""Request bodies from a command's flags and `--file`: the flags' fields laid over the file's, instants made
absolute, and the mistakes the CLI can name before any call (exit 2). The API validates the rest and names
the field it refuses (a field is declared once, in the API's models)."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickwork_cli.client import ConfigError

if TYPE_CHECKING:  # the option groups are read, not made, here; options imports the clock, which imports this
    from tickwork_cli.options import JobFields, PolicyFields, ScheduleFields

# ---------------------------------------------------------------- instants

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_TERM = r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)"
_RELATIVE = re.compile(rf"^([+-])\s*((?:{_TERM}\s*)+|\d+(?:\.\d+)?)$")
RELATIVE_HELP = "ISO-8601 with an offset (2026-12-01T09:00:00Z), now, or from now: +10s, -1h, +1h30m (ms s m h d w)"


def parse_instant(value: str, option: str, current: datetime) -> str:
    """An instant as given on the command line: `now`, a time relative to now (`+10s`, `-1h`, `+1h30m`; a bare
    number is seconds), in UTC with milliseconds; anything else is sent as given for the API to check."""
    text = value.strip()
    if text.lower() == "now":
        return _iso(current)
    if not text.startswith(("+", "-")):
        return value
    match = _RELATIVE.match(text)
    if not match:
        raise ConfigError(f"{option}: {value!r} is not a time: give {RELATIVE_HELP}")
    terms = re.findall(_TERM, match.group(2)) or [(match.group(2), "s")]
    seconds = sum(float(amount) * _UNITS[unit] for amount, unit in terms)
    return _iso(current + timedelta(seconds=-seconds if match.group(1) == "-" else seconds))


def parse_duration(value: str, option: str) -> int:
    """A length of time as given on the command line (`30m`, `1h30m`, `90`: seconds), in whole seconds."""
    match = _RELATIVE.match("+" + value.strip())
    if not match:
        raise ConfigError(f"{option}: {value!r} is not a duration: give 30m, 1h30m, 90s, 2d (ms s m h d w)")
    terms = re.findall(_TERM, match.group(2)) or [(match.group(2), "s")]
    return max(1, round(sum(float(amount) * _UNITS[unit] for amount, unit in terms)))


def tags_of(tags: list[str] | None) -> dict[str, str] | None:
    """`--tag key=value` flags as a tags object (None: none given)."""
    return _tags(tags)


def _iso(instant: datetime) -> str:
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- files and flags


def _read(path: Path, option: str) -> str:
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path}: {exc.strerror}") from None


def _json_value(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON ({exc})") from None


def _json_object(text: str, source: str, what: str) -> dict[str, Any]:
    value = _json_value(text, source)
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: must hold a JSON object ({what})")
    return value


def json_object(text: str, source: str, what: str) -> dict[str, Any]:
    """A JSON object given on the command line (`source` names the option)."""
    return _json_object(text, source, what)


def json_object_file(path: Path, what: str) -> dict[str, Any]:
    """The JSON object `--file` names (or stdin for -), as the request body it stands for."""
    return _json_object(_read(path, "--file"), "--file", what)


def json_value_file(path: Path) -> Any:
    """The JSON value (of any kind) `--file` names, or stdin for -."""
    return _json_value(_read(path, "--file"), "--file")


def given(**fields: Any) -> dict[str, Any]:
    """The fields given (not None)."""
    return {k: v for k, v in fields.items() if v is not None}


def overlay(base: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """The flags' fields over the file's: nested objects (retry, tags, ...) field by field, a payload whole,
    and a schedule whole when the flags name its kind (--at, --cron, --rate), else field by field."""
    out = dict(base)
    for key, value in flags.items():
        old = out.get(key)
        whole = key == "payload" or (key == "schedule" and bool(SCHEDULE_KINDS & set(value)))
        out[key] = overlay(old, value) if isinstance(old, dict) and isinstance(value, dict) and not whole else value
    return out


def payload_of(fields: JobFields) -> dict[str, Any] | None:
    return payload_given(fields.payload, fields.payload_file)


def payload_given(payload: str | None, payload_file: Path | None) -> dict[str, Any] | None:
    """The payload --payload or --payload-file gives (one of them, or neither: None)."""
    if payload is not None and payload_file is not None:
        raise ConfigError("give --payload or --payload-file, not both")
    if payload_file is not None:
        return _json_object(_read(payload_file, "--payload-file"), str(payload_file), "the payload")
    if payload is not None:
        return _json_object(payload, "--payload", "the payload")
    return None


def _tags(tags: list[str] | None) -> dict[str, str] | None:
    if not tags:
        return None
    out = {}
    for tag in tags:
        key, sep, value = tag.partition("=")
        if not sep or not key:
            raise ConfigError(f"--tag must be key=value, not {tag!r}")
        out[key] = value
    return out


# ---------------------------------------------------------------- schedules

SCHEDULE_KINDS = {"at", "cron", "rate"}


def timezone_of(schedule: ScheduleFields) -> str | None:
    """--timezone, or its old spelling --tz (hidden, kept for a release)."""
    if schedule.timezone is not None and schedule.tz is not None and schedule.timezone != schedule.tz:
        raise ConfigError("--tz is the old spelling of --timezone: give one of them")
    return schedule.timezone if schedule.timezone is not None else schedule.tz


def schedule_of(schedule: ScheduleFields, current: datetime) -> dict[str, Any]:
    """The schedule fields given; `now` and relative times made absolute."""
    instants = {
        key: parse_instant(value, option, current)
        for key, option, value in (
            ("at", "--at", schedule.at),
            ("start_at", "--start-at", schedule.start_at),
            ("end_at", "--end-at", schedule.end_at),
        )
        if value is not None
    }
    return given(cron=schedule.cron, rate=schedule.rate, timezone=timezone_of(schedule)) | instants


def refuse_a_zone_for_a_rate(flags: ScheduleFields, schedule: dict[str, Any] | None) -> None:
    """A rate counts fixed intervals from its start, the same in every zone: a zone given for one would be
    stored and never used, so it is refused rather than ignored."""
    if timezone_of(flags) is not None and schedule and schedule.get("rate") is not None:
        raise ConfigError(
            "--timezone applies to --cron: a --rate schedule counts fixed intervals, the same in every "
            "zone; leave out --timezone, or give --cron"
        )


# ---------------------------------------------------------------- settings


def policy_of(policy: PolicyFields) -> dict[str, Any]:
    """What jobs and workflows both take: priority, the retry policy, the timeout, the misfire grace, tags."""
    retry = given(
        max_attempts=policy.max_attempts, backoff_seconds=policy.backoff, max_backoff_seconds=policy.max_backoff
    )
    return given(
        priority=policy.priority,
        retry=retry or None,
        timeout_seconds=policy.timeout,
        misfire_grace_seconds=policy.misfire_grace,
        tags=_tags(policy.tag),
        calendars=policy.calendar,
        on_blocked=policy.on_blocked,
    )


_CONCURRENCY = re.compile(r"^(.+)=(\d+)$")
_RATE_LIMIT = re.compile(r"^(.+)=(\d+(?:\.\d+)?)/(s|min)$")


def _concurrency(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    match = _CONCURRENCY.match(value)
    if not match:
        raise ConfigError(f"--concurrency must be KEY=LIMIT (at most LIMIT runs of KEY at once), not {value!r}")
    return {"key": match.group(1), "limit": int(match.group(2))}


def _rate_limit(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    match = _RATE_LIMIT.match(value)
    if not match:
        raise ConfigError(
            f"--rate-limit must be KEY=N/s or KEY=N/min (runs of KEY started at most so often), not {value!r}"
        )
    unit = "per_second" if match.group(3) == "s" else "per_minute"
    return {"key": match.group(1), unit: float(match.group(2))}


def _ordering(key: str | None, on_failure: str | None) -> dict[str, Any] | None:
    if key is None:
        if on_failure is not None:
            raise ConfigError("--ordering-on-failure needs --ordering KEY")
        return None
    return given(key=key, on_failure=on_failure)


_DEBOUNCE = re.compile(r"^(.+)=(\d+)s?$")


def debounce_of(value: str | None, collect: bool) -> dict[str, Any] | None:
    """`--debounce KEY=SECONDS` (with `--debounce-collect`) as the API's `debounce`."""
    if value is None:
        if collect:
            raise ConfigError("--debounce-collect needs --debounce KEY=SECONDS")
        return None
    match = _DEBOUNCE.match(value)
    if not match:
        raise ConfigError(f"--debounce must be KEY=SECONDS (triggers of KEY within SECONDS collapse), not {value!r}")
    return {"key": match.group(1), "seconds": int(match.group(2)), **({"collect": True} if collect else {})}


def _deadline(within: str | None, on_miss: str | None) -> dict[str, Any] | None:
    """`--deadline DURATION` (with `--on-deadline-miss`) as the API's `deadline`; the API names a missing
    `within_seconds` when only --on-deadline-miss is given."""
    within_seconds = parse_duration(within, "--deadline") if within is not None else None
    return given(within_seconds=within_seconds, on_miss=on_miss) or None


def _notify(events: list[str] | None) -> list[str] | None:
    """`--notify EVENT` flags as the API's `notify` list; `--notify none` alone: no event (`[]`)."""
    if events is None:
        return None
    if [event.lower() for event in events] == ["none"]:
        return []
    return events


def _variants(text: str | None) -> list[Any] | None:
    """`--variants JSON` as the API's `variants` (a list; each variant is checked by the API)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--variants is not JSON: {exc}") from None
    if not isinstance(value, list):
        raise ConfigError('--variants is a JSON list of variants, such as \'[{"name": "v2", "weight": 10}]\'')
    return value


def job_settings_of(fields: JobFields) -> dict[str, Any]:
    """What only jobs take: overlap, catch-up, the circuit breaker, jitter, precision, limits, the run time,
    the deadline, the events published."""
    return given(
        overlap=fields.overlap,
        catchup=fields.catchup,
        # Only what was given: the API names a missing threshold or cooldown (422).
        circuit_breaker=given(
            failure_threshold=fields.failure_threshold,
            cooldown_seconds=fields.cooldown_seconds,
            max_cooldown_seconds=fields.max_cooldown_seconds,
        )
        or None,
        jitter_seconds=fields.jitter_seconds,
        start_precision=fields.start_precision,
        dispatch_order=fields.dispatch_order,
        concurrency=_concurrency(fields.concurrency),
        rate_limit=_rate_limit(fields.rate_limit),
        ordering=_ordering(fields.ordering, fields.ordering_on_failure),
        debounce=debounce_of(fields.debounce, fields.debounce_collect),
        max_run_seconds=fields.max_run_seconds,
        deadline=_deadline(fields.deadline, fields.on_deadline_miss),
        notify=_notify(fields.notify),
        variants=_variants(fields.variants),
    )
