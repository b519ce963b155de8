"""What `tickwork dev` prints as a user reads it: the banner, the ready line and a line per run; the functions'
JSON logs below WARNING only with `--verbose`, and none below the `--log-level` asked for."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import instant_in, running_node, wait_for

pytestmark = pytest.mark.e2e

RUN_SUCCEEDED = re.compile(r" run SUCCEEDED\s+quiet \(j[0-9a-z]{25}\.\d{13}\)")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _json_log_levels(name: str, *args: str) -> list[str]:
    """The levels of the JSON log lines a node printed while it ran one job to SUCCEEDED; its output asserted to
    hold the banner, the ready line and the run's line."""
    with running_node(name, "--tick-seconds", "2", *args) as node:
        job = node.api.create_job(name="quiet", schedule={"at": instant_in(3)}, payload={"n": 1})
        wait_for(
            lambda: [run for run in node.api.runs(job["id"]) if run["status"] == "SUCCEEDED"],
            60,
            what="the run to succeed",
        )
        wait_for(lambda: any(RUN_SUCCEEDED.search(line) for line in node.proc.lines), 10, what="the run line")
        lines = list(node.proc.lines)
    assert any(line.startswith("Tickwork local runtime") for line in lines), lines
    assert any(line.startswith("ready in ") for line in lines), lines
    levels = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "level" in entry:
            levels.append(entry["level"])
    return levels


def test_dev_prints_no_json_info_lines_by_default() -> None:
    levels = _json_log_levels("default")
    assert "INFO" not in levels, levels


def test_dev_prints_the_json_info_lines_with_verbose() -> None:
    assert "INFO" in _json_log_levels("verbose", "--verbose")


def test_dev_log_level_error_prints_no_json_line_below_error() -> None:
    levels = _json_log_levels("errors", "--log-level", "ERROR")
    assert [level for level in levels if LEVELS.index(level) < LEVELS.index("ERROR")] == []
