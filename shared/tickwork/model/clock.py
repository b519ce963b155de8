"""Time comes from a clock object, so tests move time instead of sleeping."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to; `sleep` advances it instantly."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs an aware datetime")
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, instant: datetime) -> None:
        with self._lock:
            self._now = instant


def to_ms(instant: datetime) -> int:
    return int(instant.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def iso(instant: datetime | None) -> str | None:
    """ISO-8601 UTC with milliseconds and a Z, the one format Tickwork writes."""
    if instant is None:
        return None
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def as_utc(value: object) -> object:
    """An instant as aware UTC, from an ISO string or a datetime; naive values are taken as UTC (schedules re-read
    them in their zone). Anything else is returned as it is, for a validator to refuse."""
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


def stored_instant(value: object) -> datetime:
    """An instant as written by Tickwork (ISO text, or a datetime), as aware UTC."""
    instant = as_utc(value)
    if not isinstance(instant, datetime):
        raise ValueError(f"not an instant: {value!r}")
    return instant


def optional_instant(value: object) -> datetime | None:
    """A stored instant that may be absent."""
    return None if value is None else stored_instant(value)
