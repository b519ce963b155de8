"""When a job fires: one-shot `at`, `cron` (5 fields, or 6 with seconds first) or `rate`, in a time zone.

The cron dialect is Vixie cron's, with the differences listed in docs/cron.md. Tickwork parses and checks each
expression itself and hands croniter explicit value lists, so croniter only iterates.

DST rules (wall-clock schedules such as cron are evaluated in the job's time zone):
- a wall time skipped by a spring-forward gap fires once, at the first valid instant after it
  (the end of the gap);
- a wall time repeated by an autumn fall-back fires once, at its first (summer-time) instant.
`rate` schedules are fixed intervals of real time and ignore DST.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from tickwork.model.clock import as_utc, iso

_RATE = re.compile(r"^\s*(\d+)\s+(second|minute|hour|day)s?\s*$", re.IGNORECASE)
_RATE_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
MAX_RATE_SECONDS = 366 * 86400
# The Gregorian calendar repeats every 400 years: a cron with no occurrence in that span has none at all
# (and such expressions are rejected up front; see _never_fires).
_CRON_SEARCH_YEARS = 400
# Schedule.shortest_period samples this many occurrences, from this instant, and the occurrences either side of
# every change of the zone's offset in the year from it (both DST transitions, wherever the zone has them).
PERIOD_SAMPLE = 400
_PERIOD_SAMPLE_FROM = datetime(2026, 1, 1, tzinfo=UTC)
_PERIOD_TRANSITIONS_UNTIL = datetime(2027, 1, 1, tzinfo=UTC)
# The walk across an offset change takes the last occurrence before it and the two at or after it; a few more in
# case the step back found an earlier one than the forward walk would (a repeated hour's wall times).
_ACROSS_STEPS = 8
# A schedule's end of time: the last instant a run id names (13 digits of milliseconds). Every schedule ends
# there, with no occurrence after it (an answer, not an error, for a cron as rare as 29 February on a Sunday).
END_OF_TIME = datetime(2286, 11, 20, 17, 46, 39, 999000, tzinfo=UTC)


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(as_utc),
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
        return as_utc(value)
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
    """Normalise a cron expression's spacing; returns (expression, has_seconds). Seconds, when present, come first."""
    expr = " ".join(expression.split())
    if expr.startswith("@"):
        return expr, False
    count = len(expr.split(" "))
    if count not in (5, 6):
        raise _invalid(
            expression, f"it must have 5 fields (minute hour day month weekday) or 6 with seconds first; got {count}"
        )
    return expr, count == 6


def _invalid(expression: str, reason: str) -> ValueError:
    return ValueError(f"cron expression {expression!r} is not valid: {reason}")


class _Unsupported(Exception):
    """A field outside Tickwork's cron dialect; the message says why (see docs/cron.md)."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] = field(default_factory=dict)


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_SECOND = _Field("second", 0, 59)
_MINUTE = _Field("minute", 0, 59)
_HOUR = _Field("hour", 0, 23)
_DOM = _Field("day-of-month", 1, 31)
_MONTH = _Field("month", 1, 12, {name: i for i, name in enumerate(_MONTH_NAMES, start=1)})
_DOW = _Field("day-of-week", 0, 7, {name: i for i, name in enumerate(_DAY_NAMES)})  # 0 and 7 are Sunday
_FIVE = (_MINUTE, _HOUR, _DOM, _MONTH, _DOW)
# `*`, `*/step`, `value`, `value/step`, `low-high`, `low-high/step`; values are numbers or names.
_ITEM = re.compile(r"(?:(?P<star>\*)|(?P<low>[0-9a-z]+)(?:-(?P<high>[0-9a-z]+))?)(?:/(?P<step>[0-9]+))?", re.ASCII)
_HASH = re.compile(r"h(?:\((?P<low>[0-9]+)-(?P<high>[0-9]+)\))?(?:/(?P<step>[0-9]+))?", re.ASCII)
_RANDOM = re.compile(r"r(?:\(.*\))?(?:/.*)?", re.ASCII)
_NTH_WEEKDAY = re.compile(r"(?P<day>[^#]+)#(?P<nth>[0-9]+)", re.ASCII)  # 5#2: the second Friday
_LAST_WEEKDAY = re.compile(r"(?P<day>[^l]+)l", re.ASCII)  # 5L, FRIL: the last Friday
# Fixed times, as in Vixie cron: a macro is never hashed (only a written `H` is).
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _value(spec: _Field, text: str) -> int:
    value = int(text) if text.isdigit() else spec.names.get(text)
    if value is None:
        raise _Unsupported(f"unknown value {text.upper()!r} in the {spec.name} field")
    if not spec.low <= value <= spec.high:
        raise _Unsupported(f"{spec.name} value {value} is out of range {spec.low}-{spec.high}")
    return value


def _single_day(text: str) -> int:
    if not (text.isdigit() or text in _DOW.names):
        raise _Unsupported(f"`#` and `L` in the day-of-week field take a single day (5#2, FRIL), not {text.upper()!r}")
    return _value(_DOW, text) % 7


def _hashed(spec: _Field, match: re.Match[str]) -> str:
    if match["low"] is not None:
        low, high = _value(spec, match["low"]), _value(spec, match["high"])
        if low >= high:
            raise _Unsupported(f"H(low-high) needs low < high in the {spec.name} field")
    if match["step"] is not None and int(match["step"]) < 1:
        raise _Unsupported(f"step must be at least 1 in the {spec.name} field")
    if spec is _DOM and match["low"] is None:
        # As in Jenkins: a hashed day of the month is one that every month has.
        return "h(1-28)" + (f"/{match['step']}" if match["step"] else "")
    return match[0]


def _draws(planned: str, low: int, high: int) -> list[set[int]]:
    """Every set of values a planned field can stand for: one per possible hash draw (croniter's H expansion)."""
    if planned == "*":
        return [set(range(low, high + 1))]
    if hashed := _HASH.fullmatch(planned):
        if hashed["low"] is not None:
            low, high = int(hashed["low"]), int(hashed["high"])
        if hashed["step"] is None:
            return [{value} for value in range(low, high + 1)]
        step = int(hashed["step"])
        return [set(range(first, high + 1, step)) for first in range(low, min(low + step - 1, high) + 1)]
    return [{28 if value == "l" else int(value) for value in planned.split(",")}]  # L: every month has one


_LONGEST_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _never_fires(plan: _CronPlan) -> str | None:
    """Why an expression has no occurrence at all, for some or every hash draw; None when it always fires.

    Only a day of the month that no selected month has can stop a cron: every date comes round on every
    weekday within the 400-year Gregorian cycle (Feb 29th too), and the other fields always match something.
    """
    *_, dom, month, _ = plan.expression.split(" ")
    if plan.day_or or dom == "*":
        return None
    possible = [
        any(day <= _LONGEST_MONTH[m] for day in days for m in months)
        for days in _draws(dom, 1, 31)
        for months in _draws(month, 1, 12)
    ]
    if all(possible):
        return None
    return "never fires" if not any(possible) else "never fires for some jobs: H can draw a day no selected month has"


def _plan_field(spec: _Field, text: str) -> str:
    """One field as croniter is to read it: the explicit, sorted list of its values (never a range croniter could
    misread), `*`, a hash (`H`...) for croniter to draw, or the kept extensions `L`, `5L` and `5#2`."""
    text = text.lower()
    if text == "*":
        return text
    if text == "?":
        if spec not in (_DOM, _DOW):
            raise _Unsupported("`?` is only allowed in the day-of-month and day-of-week fields (it means *)")
        return "*"
    if _RANDOM.fullmatch(text):
        # croniter draws R afresh every time the expression is read: a random number of runs.
        raise _Unsupported(f"`R` (random) is not supported in the {spec.name} field; use `H`")
    if hashed := _HASH.fullmatch(text):
        return _hashed(spec, hashed)
    values: set[int] = set()
    extensions: list[str] = []
    for item in text.split(","):
        if _HASH.fullmatch(item):
            raise _Unsupported(f"`H` must be the whole field, not part of a list, in the {spec.name} field")
        if spec is _DOM and "w" in item:
            raise _Unsupported("`W` (nearest weekday) is not supported")
        if spec is _DOM and "l" in item:
            if item != "l":
                raise _Unsupported("`L` must stand alone in the day-of-month field (as in 15,L); no L-n, no ranges")
            extensions.append("l")
            continue
        if spec is _DOW and (nth := _NTH_WEEKDAY.fullmatch(item)):
            day, n = _single_day(nth["day"]), int(nth["nth"])
            if not 1 <= n <= 5:
                raise _Unsupported(f"the n of day#n is out of range 1-5, not {n}")
            extensions.append(f"{day}#{n}")
            continue
        if spec is _DOW and item == "l":
            raise _Unsupported("`L` alone in the day-of-week field is not supported; write 5L or FRIL (last Friday)")
        if spec is _DOW and (last := _LAST_WEEKDAY.fullmatch(item)):
            extensions.append(f"l{_single_day(last['day'])}")
            continue
        match = _ITEM.fullmatch(item)
        if match is None:
            raise _Unsupported(
                f"{item.upper() or 'an empty item'!r} is not a value, range or step in the {spec.name} field"
            )
        if match["star"]:
            low, high = spec.low, spec.high
        else:
            low = _value(spec, match["low"])
            high = _value(spec, match["high"]) if match["high"] else (spec.high if match["step"] else low)
        if high < low:
            if spec is _DOW and high == 0:
                stepped = f"/{match['step']}" if match["step"] else ""
                hint = f"Sunday is also 7, so write {match['low'].upper()}-7{stepped}"
            else:
                hint = f"split it in two: {low}-{spec.high},{spec.low}-{high}"
            raise _Unsupported(f"range {item.upper()!r} in the {spec.name} field runs backwards; {hint}")
        step = int(match["step"] or 1)
        if step < 1:
            raise _Unsupported(f"step must be at least 1 in the {spec.name} field")
        values.update(range(low, high + 1, step))
    if spec is _DOW:
        if values and extensions:
            raise _Unsupported("`#` and `L` cannot be mixed with plain days in the day-of-week field")
        values = {v % 7 for v in values}
    return ",".join([*(str(v) for v in sorted(values)), *extensions])


@dataclass(frozen=True)
class _CronPlan:
    """What croniter is given for an expression: explicit values wherever croniter would misread the text."""

    expression: str
    seconds: bool
    day_or: bool


@lru_cache(maxsize=1024)
def _cron_plan(expression: str) -> _CronPlan:
    """Check an expression against Tickwork's dialect (docs/cron.md) and plan it for croniter.

    Raises ValueError naming the cron expression and the reason."""
    expr, seconds = _cron_fields(expression)
    if expr.startswith("@"):
        macro = expr.lower()
        if macro == "@reboot":
            raise _invalid(expression, "@reboot is not supported: a Tickwork job has no boot to run at")
        if macro not in _MACROS:
            raise _invalid(expression, f"unknown macro; use one of {', '.join(_MACROS)}")
        expr = _MACROS[macro]
    fields = expr.split(" ")
    specs = (_SECOND, *_FIVE) if seconds else _FIVE
    try:
        planned = [_plan_field(spec, text) for spec, text in zip(specs, fields, strict=True)]
    except _Unsupported as exc:
        raise _invalid(expression, str(exc)) from None
    dom, dow = fields[-3], fields[-1]
    if ("#" in planned[-1] or "l" in planned[-1]) and dom not in ("*", "?"):
        raise _invalid(expression, "with `#` or `L` in day-of-week, day-of-month must be * or ?")
    # Vixie cron's day rule: a day matches day-of-month OR day-of-week only when both are restricted;
    # a field starting with `*` (`*`, `*/2`) or `?` is unrestricted, and then the day must match both.
    day_or = not (dom.startswith(("*", "?")) or dow.startswith(("*", "?")))
    if planned[-1] == "*" and len(planned[-3].split(",")) == _DOM.high:
        # croniter reads a 31-item day-of-month list as `*` when day-of-week is `*`, but thirty days and `L`
        # (2-31,L: not the 1st) are not every day. Every weekday written out keeps the list a list.
        planned[-1] = ",".join(str(day) for day in range(7))
    return _CronPlan(" ".join(planned), seconds, day_or)


def validate_cron(expression: str) -> str:
    expr, _ = _cron_fields(expression)
    plan = _cron_plan(expr)
    try:
        valid = croniter.is_valid(plan.expression, hash_id=b"validate", second_at_beginning=plan.seconds)
    except CroniterError:  # pragma: no cover - is_valid normally swallows these
        valid = False
    if not valid:  # pragma: no cover - the plan is croniter-ready by construction
        raise _invalid(expression, "croniter cannot read it")
    return expr


def firing_cron(expression: str) -> str:
    """A cron expression that is valid and fires: the one rule for every cron a caller gives (a job's or a
    workflow's schedule, a calendar's window). ValueError naming the expression and the reason otherwise."""
    valid = validate_cron(expression)
    if reason := _never_fires(_cron_plan(valid)):
        raise ValueError(
            f"cron expression {expression!r} {reason} (no selected month has the day of the month it asks for, "
            "so it has no occurrence in any year)"
        )
    return valid


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


# What DST did to an occurrence: "gap" when the wall time asked for did not exist (a spring-forward skipped it,
# and the occurrence is at the end of the gap); "fold" when it is a wall time the zone shows twice (autumn
# fall-back: the occurrence is its first instant, and the second pass does not fire again); None otherwise.
DstFlag = Literal["gap", "fold"] | None


def _is_repeated(wall: datetime, zone: ZoneInfo) -> bool:
    """The zone shows this naive wall time twice (both passes exist, at different offsets)."""
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    return first.utcoffset() != second.utcoffset() and second.astimezone(UTC).astimezone(zone).fold == 1


def _real_time_flag(instant: datetime, zone: ZoneInfo) -> DstFlag:
    """A rate's or a one-shot's instant is real time, never moved by DST: "fold" only says that the wall time it
    shows in its zone is one the zone shows twice."""
    return "fold" if _is_repeated(instant.astimezone(zone).replace(tzinfo=None), zone) else None


def _search_start(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive wall time after which the next cron wall time is the next occurrence after `instant`."""
    wall = instant.astimezone(zone).replace(tzinfo=None)
    first = resolve_wall_time(wall, zone)
    if first >= instant:
        return wall
    # `instant` is in the second pass of a repeated period (autumn fall-back): every wall time up to the end
    # of the repeat already fired at its first instant, so search from there. The transition is the first
    # instant with the later offset, between the first and the second pass of `wall`.
    lo, hi = first, instant
    later_offset = instant.astimezone(zone).utcoffset()
    while hi - lo > timedelta(microseconds=1):
        mid = lo + (hi - lo) / 2
        if mid.astimezone(zone).utcoffset() == later_offset:
            hi = mid
        else:
            lo = mid
    # Up to the transition the clock showed the earlier (larger) offset: that is where the repeat ends.
    repeat_end = hi.astimezone(UTC).replace(tzinfo=None) + (first.astimezone(zone).utcoffset() or timedelta(0))
    return repeat_end - timedelta(microseconds=1)


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
        # Here rather than on the whole schedule, so that the 422 names `schedule.cron`.
        return None if value is None else firing_cron(value)

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
        return next(self.iter_after(instant, anchor=anchor, hash_key=hash_key), None)

    def iter_after(self, instant: datetime, *, anchor: datetime, hash_key: str | None = None) -> Iterator[datetime]:
        """Successive occurrences strictly after `instant`, in order, within start_at/end_at and END_OF_TIME.

        The same sequence as calling next_after on each result in turn, but one cron iterator (or the rate
        arithmetic) serves the whole walk: catching up after an outage costs one step per occurrence.
        """
        for occurrence, _ in self.iter_flagged_after(instant, anchor=anchor, hash_key=hash_key):
            yield occurrence

    def iter_flagged_after(
        self, instant: datetime, *, anchor: datetime, hash_key: str | None = None
    ) -> Iterator[tuple[datetime, DstFlag]]:
        """iter_after's occurrences, each with what DST did to it (see DstFlag): the walk the scheduler takes,
        so a preview shows exactly what will run."""
        end = END_OF_TIME if self.end_at is None else min(self.end_at, END_OF_TIME)
        if self.at is not None:
            if instant < self.at <= end:
                yield self.at, _real_time_flag(self.at, self.zone)
            return
        if self.start_at is not None and instant < self.start_at:
            instant = self.start_at - timedelta(microseconds=1)  # the next occurrence at or after start_at
        found = (
            ((o, _real_time_flag(o, self.zone)) for o in self._rate_after(instant, anchor))
            if self.rate is not None
            else self._cron_after(instant, hash_key)
        )
        for occurrence, flag in found:
            if occurrence > end:
                return
            yield occurrence, flag

    def _rate_after(self, instant: datetime, anchor: datetime) -> Iterator[datetime]:
        period = parse_rate(self.rate or "")
        origin, first_k = (self.start_at, 0) if self.start_at is not None else (anchor.replace(microsecond=0), 1)
        elapsed = instant - origin
        k = max(first_k, int(elapsed // period) + 1) if elapsed >= timedelta(0) else first_k
        occurrence = origin + k * period
        while True:
            yield occurrence
            occurrence += period

    def _cron_after(self, instant: datetime, hash_key: str | None) -> Iterator[tuple[datetime, DstFlag]]:
        """Successive cron occurrences strictly after `instant`, by the DST rules, from one croniter iterator.

        croniter walks naive wall times in the zone; each is resolved to its instant. The walk starts where the
        next occurrence can be, so no wall time is ever resolved only to be thrown away: after a wall time in a
        spring-forward gap it resumes at the end of the gap (the rest of the gap fired with it), and from the
        second pass of a repeated hour it starts at the end of the repeat (the repeated wall times fired in the
        first pass). It ends at END_OF_TIME, or when there is no occurrence within 400 years, that is none at all.
        """
        plan = _cron_plan(self.cron or "")
        zone = self.zone
        it = croniter(
            plan.expression,
            _search_start(instant, zone),
            hash_id=hash_key or "tickwork",
            second_at_beginning=plan.seconds,
            day_or=plan.day_or,
            max_years_between_matches=_CRON_SEARCH_YEARS,
        )
        last = instant
        while True:
            try:
                wall: datetime = it.get_next(datetime)
            except CroniterBadDateError:
                return
            found = resolve_wall_time(wall, zone)
            if found > END_OF_TIME:
                return
            if found <= last:  # pragma: no cover - first instants of later wall times are later
                raise RuntimeError(
                    f"cron {self.cron!r} in {self.timezone}: {wall} resolves to {found}, not after {last}"
                )
            landed = found.astimezone(zone).replace(tzinfo=None)
            yield found, ("gap" if landed > wall else "fold" if _is_repeated(wall, zone) else None)
            last = found
            if landed > wall:  # a wall time skipped by a gap fired at its end, with every other one in the gap
                it.set_current(landed, force=True)

    def latest_at_or_before(self, instant: datetime, *, hash_key: str | None = None) -> datetime | None:
        """A cron schedule's latest occurrence at or before `instant` (one croniter step), by the DST rules of
        the forward walk: a wall time in a spring-forward gap is the gap's end; a repeated one, its first
        instant. None when there is none within 400 years. start_at and end_at are not applied."""
        plan = _cron_plan(self.cron or "")
        zone = self.zone
        # Openings are whole seconds: searching back from just after `instant`'s (or, in the second pass of a
        # repeated hour, the repeat's end) includes one at `instant` itself.
        wall = _search_start(instant, zone).replace(microsecond=0) + timedelta(microseconds=1)
        it = croniter(
            plan.expression,
            wall,
            hash_id=hash_key or "tickwork",
            second_at_beginning=plan.seconds,
            day_or=plan.day_or,
            max_years_between_matches=_CRON_SEARCH_YEARS,
        )
        try:
            found = resolve_wall_time(it.get_prev(datetime), zone)
        except CroniterBadDateError:
            return None
        return found if found <= instant else None

    def shortest_period(self, *, hash_key: str | None = None) -> timedelta | None:
        """The shortest gap between consecutive occurrences, found cheaply: a rate's period; for a cron, the
        smallest gap among its first PERIOD_SAMPLE occurrences from 2026-01-01 and among the occurrences either
        side of each change of the zone's offset in 2026 (a spring-forward shortens the gap across it: 01:45 to
        03:00 is 15 minutes); None for a one-shot, which has no period."""
        return _shortest_period(self, hash_key)

    def _sampled_period(self, hash_key: str | None) -> timedelta | None:
        if self.at is not None:
            return None
        if self.rate is not None:
            return parse_rate(self.rate)
        walk = self._cron_after(_PERIOD_SAMPLE_FROM, hash_key)
        sample = [found for found, _ in itertools.islice(walk, PERIOD_SAMPLE)]
        gaps = [later - earlier for earlier, later in itertools.pairwise(sample)]
        for change in _offset_changes(self.timezone):
            across = self._across(change, hash_key)
            gaps += [later - earlier for earlier, later in itertools.pairwise(across)]
        return min(gaps, default=None)

    def _across(self, change: datetime, hash_key: str | None) -> list[datetime]:
        """Consecutive cron occurrences from the last before `change` to the second at or after it: every gap
        the change can shorten. The last before it is one croniter step back (latest_at_or_before), and the walk
        forward from there takes a few steps: never the occurrences of the months between (a cron that fires a
        thousand times in January, and the change in April, cost a search, not the thousands)."""
        last = self.latest_at_or_before(change - timedelta(seconds=1), hash_key=hash_key)  # occurrences: whole seconds
        if last is None:
            return []  # nothing before it: no gap crosses it
        found: list[datetime] = []
        after_change = 0
        for occurrence, _ in self._cron_after(last - timedelta(seconds=1), hash_key):
            found.append(occurrence)
            after_change += occurrence >= change
            if after_change == 2 or len(found) == _ACROSS_STEPS:
                break
        return found

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
        found = itertools.takewhile(lambda t: t <= until, self.iter_after(after, anchor=anchor, hash_key=hash_key))
        return list(itertools.islice(found, max(limit, 0)))


@lru_cache(maxsize=64)
def _offset_changes(zone_name: str) -> tuple[datetime, ...]:
    """The instants in 2026 at which the zone's UTC offset changes (its DST transitions), to the second."""
    zone = _zone(zone_name)

    def offset(ts: int) -> timedelta | None:
        return datetime.fromtimestamp(ts, zone).utcoffset()

    day = 86_400
    changes = []
    start, end = int(_PERIOD_SAMPLE_FROM.timestamp()), int(_PERIOD_TRANSITIONS_UNTIL.timestamp())
    for day_start in range(start, end, day):
        lo, hi = day_start, day_start + day
        if offset(lo) == offset(hi):
            continue
        while hi - lo > 1:  # the first second with the new offset
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if offset(mid) == offset(lo) else (lo, mid)
        changes.append(datetime.fromtimestamp(hi, UTC))
    return tuple(changes)


@lru_cache(maxsize=1024)
def _shortest_period(schedule: Schedule, hash_key: str | None) -> timedelta | None:
    """Schedule.shortest_period, once per schedule: every read of a jittered job checks its jitter against it."""
    return schedule._sampled_period(hash_key)
