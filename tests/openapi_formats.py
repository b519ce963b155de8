"""Strategies for the string formats the API's OpenAPI document names (`cron`, `rate`, `time-zone`), for the
schemathesis runs: valid values, so that a generated job or calendar can be created and its links followed. To
JSON Schema a format is only an annotation: the fuzzer may still send any string there."""

from __future__ import annotations

import schemathesis
from hypothesis import strategies as st

_CRON_FIELDS = (
    ("*", "0", "15", "*/5", "H", "0-30", "5,35"),  # minute
    ("*", "0", "9", "*/6", "H", "8-17"),  # hour
    ("*", "1", "15", "*/2", "1-7"),  # day of month (never a day some month lacks)
    ("*", "1", "6", "*/3", "1-6"),  # month
    ("*", "1", "0", "1-5", "MON-FRI"),  # day of week
)
_RATE_MAX = {"second": 366 * 86400, "minute": 366 * 1440, "hour": 366 * 24, "day": 366}


def register_openapi_formats() -> None:
    """Register the formats' strategies with schemathesis (for every schema of the process)."""
    schemathesis.openapi.format("cron", st.tuples(*(st.sampled_from(f) for f in _CRON_FIELDS)).map(" ".join))
    schemathesis.openapi.format(
        "rate",
        st.sampled_from(sorted(_RATE_MAX)).flatmap(
            lambda unit: st.builds(
                "{} {}{}".format, st.integers(1, _RATE_MAX[unit]), st.just(unit), st.sampled_from(["", "s"])
            )
        ),
    )
    schemathesis.openapi.format(
        "time-zone",
        st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]),
    )
