"""Schedule.next_after against an independent brute-force reference, over generated cron expressions.

The reference shares no code with tickwork.model.schedule or croniter. Hypothesis builds each field as a structure
(items: values, names, ranges, single-value ranges, steps, `*`, `?`, `L`, `5L`, `5#2`, every day of the month but one
with `L`), renders it as text and computes the field's value set straight from the definitions in docs/cron.md.
The reference then walks the wall-clock days in the zone, tests each day by set membership with Vixie's
day-of-month/day-of-week rule, lists that day's wall times in order and resolves each by the DST rules (a skipped
wall time fires at the end of the gap, a repeated one at its first instant), returning the first that is strictly
after the instant asked.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tickwork.model.schedule import Schedule

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
REFERENCE_YEARS = 30


# ---------------------------------------------------------------- generated expressions


@dataclass(frozen=True)
class Field:
    text: str
    values: frozenset[int]
    star: bool = False  # starts with `*` or is `?`: Vixie's unrestricted day field
    last_day: bool = False  # `L` in day-of-month
    nth: frozenset[tuple[int, int]] = frozenset()  # (weekday, n) from `d#n`; n == -1 for `dL`


def _name(value: int, low: int, names: list[str] | None, draw: st.DrawFn) -> str:
    if names and value - low < len(names) and draw(st.booleans()):
        return draw(st.sampled_from([names[value - low], names[value - low].lower(), names[value - low].title()]))
    return str(value)


@st.composite
def item(draw: st.DrawFn, low: int, high: int, names: list[str] | None = None) -> tuple[str, set[int], bool]:
    """One list item: its text, its values, and whether it starts with `*`."""
    kind = draw(st.sampled_from(["value", "range", "single-range", "range-step", "star-step", "value-step"]))
    a = draw(st.integers(low, high))
    if kind == "value":
        return _name(a, low, names, draw), {a}, False
    if kind == "single-range":
        return f"{_name(a, low, names, draw)}-{_name(a, low, names, draw)}", {a}, False
    if kind == "star-step":
        step = draw(st.integers(1, high - low + 2))
        return f"*/{step}", set(range(low, high + 1, step)), True
    if kind == "value-step":
        step = draw(st.integers(1, high - low + 2))
        return f"{a}/{step}", set(range(a, high + 1, step)), False
    b = draw(st.integers(a, high))
    text = f"{_name(a, low, names, draw)}-{_name(b, low, names, draw)}"
    if kind == "range":
        return text, set(range(a, b + 1)), False
    step = draw(st.integers(1, high - low + 2))
    return f"{text}/{step}", set(range(a, b + 1, step)), False


@st.composite
def plain_field(draw: st.DrawFn, low: int, high: int, names: list[str] | None = None) -> Field:
    if draw(st.integers(0, 2)) == 0:
        return Field("*", frozenset(range(low, high + 1)), star=True)
    items = draw(st.lists(item(low, high, names), min_size=1, max_size=3))
    values = frozenset().union(*(v for _, v, _ in items))
    return Field(",".join(t for t, _, _ in items), values, star=items[0][2])


def _dow(field: Field) -> Field:
    """Day-of-week: 7 is Sunday too."""
    return Field(field.text, frozenset(v % 7 for v in field.values), field.star, field.last_day, field.nth)


def _span(low: int, high: int) -> list[str]:
    return [] if high < low else [str(low)] if high == low else [f"{low}-{high}"]


@st.composite
def dom_field(draw: st.DrawFn) -> Field:
    choice = draw(st.integers(0, 6))
    if choice == 0:
        return Field("?", frozenset(range(1, 32)), star=True)
    if choice == 1:  # L, alone or in a list
        rest = draw(st.lists(st.integers(1, 31), max_size=2))
        return Field(",".join([*map(str, rest), "L"]), frozenset(rest), last_day=True)
    if choice == 2:
        return draw(every_day_but_one_and_l())
    return draw(plain_field(1, 31))


@st.composite
def every_day_but_one_and_l(draw: st.DrawFn) -> Field:
    """Thirty days and L: 31 items, which croniter alone reads as `*` (2-31,L would fire on the 1st)."""
    left_out = draw(st.integers(1, 31))
    items = [*_span(1, left_out - 1), *_span(left_out + 1, 31)]
    items.insert(draw(st.integers(0, len(items))), "L")
    return Field(",".join(items), frozenset(range(1, 32)) - {left_out}, last_day=True)


@st.composite
def dow_extension(draw: st.DrawFn) -> Field:
    """`5#2` (second Friday) and `5L` / `FRIL` (last Friday) items."""
    items = []
    nth = set()
    for _ in range(draw(st.integers(1, 2))):
        day = draw(st.integers(0, 7))
        spelled = _name(day, 0, DAYS, draw)
        if draw(st.booleans()):
            n = draw(st.integers(1, 5))
            items.append(f"{spelled}#{n}")
            nth.add((day % 7, n))
        else:
            items.append(f"{spelled}L")
            nth.add((day % 7, -1))
    return Field(",".join(items), frozenset(), nth=frozenset(nth))


@dataclass(frozen=True)
class Cron:
    text: str
    seconds: Field | None
    minutes: Field
    hours: Field
    dom: Field
    months: Field
    dow: Field


EVERY_DAY = Field("*", frozenset(range(1, 32)), star=True)
EVERY_MONTH = Field("*", frozenset(range(1, 13)), star=True)
EVERY_WEEKDAY = Field("*", frozenset(range(7)), star=True)


@st.composite
def crons(draw: st.DrawFn, *, every_day: bool = False, thirty_days_and_l: bool = False) -> Cron:
    seconds = draw(st.none() | plain_field(0, 59))
    minutes = draw(plain_field(0, 59))
    hours = draw(plain_field(0, 23))
    if every_day:  # so that the transition day fires: the time fields meet the DST rules
        text = " ".join([f.text for f in (seconds, minutes, hours) if f is not None] + ["*", "*", "*"])
        return Cron(text, seconds, minutes, hours, EVERY_DAY, EVERY_MONTH, EVERY_WEEKDAY)
    months = draw(plain_field(1, 12, MONTHS))
    if thirty_days_and_l:  # with day-of-week unrestricted (where croniter would misread it) or not
        dom = draw(every_day_but_one_and_l())
        dow = draw(
            st.sampled_from([EVERY_WEEKDAY, Field("?", frozenset(range(7)), star=True)]) | plain_field(0, 7, DAYS)
        )
        fields = [minutes, hours, dom, months, dow]
        return Cron(" ".join(f.text for f in fields), None, minutes, hours, dom, months, _dow(dow))
    extension = draw(st.integers(0, 5)) == 0
    if extension:  # `#` and `dL` need an unrestricted day-of-month
        dom = draw(
            st.sampled_from([Field("*", frozenset(range(1, 32)), star=True), Field("?", frozenset(range(1, 32)), True)])
        )
        dow = draw(dow_extension())
    else:
        dom = draw(dom_field())
        question = draw(st.integers(0, 4)) == 0
        dow = Field("?", frozenset(range(7)), star=True) if question else _dow(draw(plain_field(0, 7, DAYS)))
    fields = [minutes, hours, dom, months, dow]
    if seconds is not None:
        fields.insert(0, seconds)
    return Cron(" ".join(f.text for f in fields), seconds, minutes, hours, dom, months, dow)


# ---------------------------------------------------------------- the reference


def day_matches(cron: Cron, day: date) -> bool:
    if day.month not in cron.months.values:
        return False
    last = calendar.monthrange(day.year, day.month)[1]
    weekday = day.isoweekday() % 7
    dom = day.day in cron.dom.values or (cron.dom.last_day and day.day == last)
    dow = weekday in cron.dow.values or any(
        d == weekday and ((day.day - 1) // 7 + 1 == n if n > 0 else day.day > last - 7) for d, n in cron.dow.nth
    )
    if cron.dom.star or cron.dow.star:  # Vixie: either field starting with `*` makes the day match both
        return dom and dow
    return dom or dow


def wall_times(cron: Cron, day: date, not_before: datetime) -> list[datetime]:
    seconds = sorted(cron.seconds.values) if cron.seconds else [0]
    found = []
    for hour in sorted(cron.hours.values):
        for minute in sorted(cron.minutes.values):
            if (day, hour, minute) < (not_before.date(), not_before.hour, not_before.minute):
                continue
            for second in seconds:
                wall = datetime(day.year, day.month, day.day, hour, minute, second)
                if wall >= not_before:
                    found.append(wall)
    return found


def resolve(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant of a wall time: its first if repeated, the end of the gap if skipped."""
    mapped = [wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1)]
    real = [t for t in mapped if t.astimezone(zone).replace(tzinfo=None) == wall]
    if real:
        return min(real)
    t = min(mapped).replace(second=0)  # zone transitions fall on whole minutes
    while t.astimezone(zone).replace(tzinfo=None) <= wall:
        t += timedelta(minutes=1)
    return t


def reference_next(cron: Cron, zone: ZoneInfo, instant: datetime) -> datetime | None:
    # A wall time earlier than the instant's own fired before it (its first instant is earlier), so start there.
    start = instant.astimezone(zone).replace(tzinfo=None)
    day = start.date()
    while day.year <= start.year + REFERENCE_YEARS:
        if day_matches(cron, day):
            for wall in wall_times(cron, day, start):
                found = resolve(wall, zone)
                if found > instant:
                    return found
        day += timedelta(days=1)
    return None


# ---------------------------------------------------------------- the comparison

ZONES = ["America/New_York", "Europe/Paris", "Australia/Lord_Howe", "UTC", "Asia/Kolkata"]
TRANSITIONS = [  # (zone, the instant its clocks change): spring-forward gaps and fall-back repeats
    ("America/New_York", datetime(2025, 3, 9, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 11, 1, 6, tzinfo=UTC)),
    ("Europe/Paris", datetime(2027, 3, 28, 1, tzinfo=UTC)),
    ("Europe/Paris", datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 15, tzinfo=UTC)),  # 02:00 -> 01:30
    ("Australia/Lord_Howe", datetime(2026, 10, 3, 15, 30, tzinfo=UTC)),  # 02:00 -> 02:30
]
near_a_transition = st.tuples(
    st.sampled_from(TRANSITIONS), st.integers(-2 * 3600, 2 * 3600), st.integers(0, 999_999)
).map(lambda t: (t[0][0], t[0][1] + timedelta(seconds=t[1], microseconds=t[2])))
anywhere = st.tuples(
    st.sampled_from(ZONES),
    st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2028, 1, 1), timezones=st.just(UTC)),
)


@settings(max_examples=200, deadline=None)
@given(cron=crons(), where=near_a_transition | anywhere)
def test_next_after_matches_the_brute_force_reference(cron: Cron, where: tuple[str, datetime]) -> None:
    _compare(cron, where)


@settings(max_examples=150, deadline=None)
@given(cron=crons(every_day=True), where=near_a_transition)
def test_next_after_matches_the_brute_force_reference_across_dst(cron: Cron, where: tuple[str, datetime]) -> None:
    _compare(cron, where)


@settings(max_examples=60, deadline=None)
@given(cron=crons(thirty_days_and_l=True), where=anywhere)
def test_every_day_of_the_month_but_one_and_l_matches_the_brute_force_reference(
    cron: Cron, where: tuple[str, datetime]
) -> None:
    _compare(cron, where)


def _compare(cron: Cron, where: tuple[str, datetime]) -> None:
    """The next four occurrences, by next_after and by iter_after, are the reference's."""
    zone_name, instant = where
    zone = ZoneInfo(zone_name)
    expected = reference_next(cron, zone, instant)
    try:
        schedule = Schedule(cron=cron.text, timezone=zone_name)
    except ValidationError as exc:
        rejected = str(exc)
    else:
        rejected = ""
    if rejected:
        assert "never fires" in rejected, cron.text
        assert expected is None, f"{cron.text!r} was rejected but fires at {expected}"
        return
    walked = schedule.iter_after(instant, anchor=ANCHOR)
    for _ in range(4):
        got = schedule.next_after(instant, anchor=ANCHOR)
        if expected is None:  # nothing within REFERENCE_YEARS: at most something rarer than that
            assert got is None or got.year > instant.year + REFERENCE_YEARS - 1, cron.text
            return
        where = f"{cron.text!r} in {zone_name} after {instant.astimezone(zone)}"
        assert got == expected, where
        assert next(walked) == expected, f"iter_after: {where}"
        instant = got
        expected = reference_next(cron, zone, instant)
