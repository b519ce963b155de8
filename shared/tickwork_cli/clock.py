"""The CLI's clock: what `now` is when a command reads an instant (`--at +10s`), and how it waits between polls.
Commands call `clock.now()` and `clock.sleep()` through this module, so tests replace them in one place (the
API's fake clock, a sleep that lets the scheduler work)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from tickwork_cli.bodies import parse_instant

sleep: Callable[[float], None] = time.sleep


def now() -> datetime:
    return datetime.now(UTC)


def parse_at(value: str, current: datetime | None = None, option: str = "--at") -> str:
    """An instant from the command line (`now`, `+10s`, `-1h`, `+1h30m`, or ISO-8601): the one parser every
    option taking an instant uses."""
    return parse_instant(value, option, current or now())
