"""When a job fires: one-shot `at`, `cron` (5 fields, or 6 with seconds first) or `rate`, in a time zone.

DST rules (wall-clock schedules such as cron are evaluated in the job's time zone):
- a wall time skipped by a spring-forward gap fires once, at the first valid instant after it
  (the end of the gap);
- a wall time repeated by an autumn fall-back fires once, at its first (summer-time) instant.
`rate` schedules are fixed intervals of real time and ignore DST.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from tickwork.clock import iso

_RATE = re.compile(r"^\s*(\d+)\s+(second|minute|hour|day)s?\s*$", re.IGNORECASE)
_RATE_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
MAX_RATE_SECONDS = 366 * 86400
# Far enough to find the next Feb 29th on a Monday, close enough to fail fast on `0 0 31 4 *`.
_CRON_SEARCH_YEARS = 30


def _as_utc(value: object) -> object:
    """Accept ISO strings or datetimes; naive values are taken as UTC (schedules re-read them in their zone)."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"must be an ISO-8601 date-time such as 2026-12-01T09:00:00Z, not {value!r}") from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    return value


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(_as_utc),
    PlainSerializer(iso, return_type=str, when_used="json-unless-none"),
]

# Instants a caller may give (API input; stored data is read leniently by UtcDatetime): RFC 3339 with an
# explicit offset (`Z` or `+hh:mm`), a real calendar date, written with a year from 2000 to 2099. The
# lower bound catches typos (1970, 0001); the upper keeps every occurrence inside a run id's 13 digits of
# milliseconds (those end in 2286) with a wide margin. The same grammar is the OpenAPI `pattern`, so the
# document says exactly what the server accepts.
EARLIEST_YEAR = 2000
LATEST_YEAR = 2099
_DAY = (
    r"20[0-9]{2}-(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
    r"|20[0-9]{2}-(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    r"|20[0-9]{2}-02-(0[1-9]|1[0-9]|2[0-8])"
    r"|20(0[048]|[2468][048]|[13579][26])-02-29"
)
INSTANT_PATTERN = (
    rf"^({_DAY})T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{{1,6}})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
_INSTANT = re.compile(INSTANT_PATTERN)


def _instant_from_caller(value: object) -> object:
    """An instant from API input, strictly: no naive times (they would silently be read as UTC whatever the
    schedule's time zone), no other ISO-8601 shapes, years 2000 to 2099 as written."""
    naive = "must include a UTC offset or Z (a time without one is refused, not guessed), such as 2026-12-01T09:00:00-05:00 or 2026-12-01T14:00:00Z"
    years = f"must be in the years {EARLIEST_YEAR} to {LATEST_YEAR}"
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(naive)
        if not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
            raise ValueError(years)
        return value.astimezone(UTC)
    if not isinstance(value, str):  # a number would otherwise be read as seconds since 1970
        raise ValueError(
            f"must be an RFC 3339 date-time string such as 2026-12-01T09:00:00Z, not {type(value).__name__}"
        )
    if _INSTANT.fullmatch(value):
        return _as_utc(value)
    # Refused: say why as precisely as we can.
    text = value.strip()
    zulu = text.endswith(("Z", "z"))
    shape = f"must be an RFC 3339 date-time such as 2026-12-01T09:00:00Z, not {value!r}"
    try:
        written = datetime.fromisoformat(text[:-1] + "+00:00" if zulu else text)
    except ValueError:
        raise ValueError(shape) from None
    if written.tzinfo is None:
        raise ValueError(naive)
    if not EARLIEST_YEAR <= written.year <= LATEST_YEAR:
        raise ValueError(f"{years}, not {value!r}")
    raise ValueError(shape)


# A Schedule's instants as a caller gives them (see _instant_from_caller); stored as UtcDatetime.
CallerInstant = Annotated[
    datetime,
    BeforeValidator(_instant_from_caller),
    PlainSerializer(iso, return_type=str, when_used="json-unless-none"),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": INSTANT_PATTERN,
            "description": f"RFC 3339 with a UTC offset or Z, years {EARLIEST_YEAR} to {LATEST_YEAR}.",
        }
    ),
]


def parse_rate(text: str) -> timedelta:
    match = _RATE.match(text)
    if not match:
        raise ValueError('rate must look like "30 seconds", "5 minutes", "1 hour" or "2 days"')
    seconds = int(match.group(1)) * _RATE_UNITS[match.group(2).lower()]
    if seconds < 1:
        raise ValueError("rate must be at least 1 second")
    if seconds > MAX_RATE_SECONDS:
        raise ValueError("rate must be at most 366 days")
    return timedelta(seconds=seconds)


def _cron_fields(expression: str) -> tuple[str, bool]:
    """Normalise a cron expression; returns (expression, has_seconds). Seconds, when present, come first."""
    expr = " ".join(expression.split())
    if expr.startswith("@"):
        return expr, False
    count = len(expr.split(" "))
    if count not in (5, 6):
        raise ValueError(
            f"cron must have 5 fields (minute hour day month weekday) or 6 with seconds first; got {count}"
        )
    return expr, count == 6


def validate_cron(expression: str) -> str:
    expr, seconds = _cron_fields(expression)
    try:
        valid = croniter.is_valid(expr, hash_id=b"validate", second_at_beginning=seconds)
    except CroniterError:  # pragma: no cover - is_valid normally swallows these
        valid = False
    if not valid:
        raise ValueError(f"cron expression {expression!r} is not valid")
    return expr


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}; use an IANA name such as Europe/Paris") from exc


def resolve_wall_time(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant a naive wall-clock time denotes in `zone`, by Tickwork's DST rules."""
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    first_utc, second_utc = first.astimezone(UTC), second.astimezone(UTC)
    if first_utc.astimezone(zone).replace(tzinfo=None) == wall:
        return first_utc  # exists; when repeated, fold 0 is its first instant
    # In a gap: binary-search the transition, the first instant whose wall time is past `wall`.
    lo, hi = min(first_utc, second_utc), max(first_utc, second_utc)
    while hi - lo > timedelta(milliseconds=1):
        mid = lo + (hi - lo) / 2
        if mid.astimezone(zone).replace(tzinfo=None) > wall:
            hi = mid
        else:
            lo = mid
    return hi.replace(microsecond=(hi.microsecond // 1000) * 1000)


class Schedule(BaseModel):
    """Exactly one of `at`, `cron`, `rate`; optional `timezone`, `start_at`, `end_at`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: UtcDatetime | None = None
    cron: str | None = None
    rate: str | None = None
    timezone: str = "UTC"
    start_at: UtcDatetime | None = None
    end_at: UtcDatetime | None = None

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        _zone(value)
        return value

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        return None if value is None else validate_cron(value)

    @field_validator("rate")
    @classmethod
    def _valid_rate(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rate(value)
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Schedule:
        kinds = [name for name in ("at", "cron", "rate") if getattr(self, name) is not None]
        if len(kinds) != 1:
            raise ValueError(f"exactly one of at, cron or rate is required; got {', '.join(kinds) or 'none'}")
        if self.start_at and self.end_at and self.end_at <= self.start_at:
            raise ValueError("end_at must be after start_at")
        if self.cron is not None and self._next_cron(datetime(2000, 1, 1, tzinfo=UTC), "validate") is None:
            raise ValueError(f"cron expression {self.cron!r} never fires")
        return self

    @property
    def kind(self) -> Literal["at", "cron", "rate"]:
        if self.at is not None:
            return "at"
        return "cron" if self.cron is not None else "rate"

    @property
    def is_one_shot(self) -> bool:
        return self.at is not None

    @property
    def zone(self) -> ZoneInfo:
        return _zone(self.timezone)

    def next_after(self, instant: datetime, *, anchor: datetime, hash_key: str | None = None) -> datetime | None:
        """The first occurrence strictly after `instant`, within start_at/end_at; None when there is none.

        `anchor` is the job's creation time: rate schedules without start_at fire at anchor + k*rate (k >= 1).
        `hash_key` (the job id) spreads `H` fields in cron expressions, Jenkins-style.
        """
        if self.at is not None:
            found: datetime | None = self.at if self.at > instant else None
        else:
            if self.start_at is not None and instant < self.start_at:
                instant = self.start_at - timedelta(milliseconds=1)
            found = self._next_rate(instant, anchor) if self.rate is not None else self._next_cron(instant, hash_key)
        if found is not None and self.end_at is not None and found > self.end_at:
            return None
        return found

    def _next_rate(self, instant: datetime, anchor: datetime) -> datetime:
        period = parse_rate(self.rate or "")
        origin, first_k = (self.start_at, 0) if self.start_at is not None else (anchor.replace(microsecond=0), 1)
        elapsed = instant - origin
        k = max(first_k, int(elapsed // period) + 1) if elapsed >= timedelta(0) else first_k
        return origin + k * period

    def _next_cron(self, instant: datetime, hash_key: str | None) -> datetime | None:
        expr, seconds = _cron_fields(self.cron or "")
        zone = self.zone
        wall = instant.astimezone(zone).replace(tzinfo=None)
        try:
            it = croniter(
                expr,
                wall,
                hash_id=hash_key or "tickwork",
                second_at_beginning=seconds,
                max_years_between_matches=_CRON_SEARCH_YEARS,
            )
            # Wall times already passed in an earlier fold (autumn repeat) resolve to instants <= instant.
            for _ in range(1000):
                candidate = resolve_wall_time(it.get_next(datetime), zone)
                if candidate > instant:
                    return candidate
        except (CroniterBadDateError, CroniterBadCronError):
            return None
        return None  # pragma: no cover - 1000 consecutive past instants cannot happen

    def occurrences(
        self,
        after: datetime,
        until: datetime,
        *,
        anchor: datetime,
        hash_key: str | None = None,
        limit: int = 1000,
    ) -> list[datetime]:
        """Occurrences in (after, until], at most `limit`."""
        found: list[datetime] = []
        cursor = after
        while len(found) < limit:
            nxt = self.next_after(cursor, anchor=anchor, hash_key=hash_key)
            if nxt is None or nxt > until:
                break
            found.append(nxt)
            cursor = nxt
        return found
