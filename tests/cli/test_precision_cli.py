"""`--start-precision` on `tickwork jobs create` and `update` (issue 16: precise starts)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_create_and_update_with_a_start_precision(cli):
    job = cli.json("jobs", "create", "--name", "p", "--type", "echo", "--rate", "1 minute")
    assert job["start_precision"] == "second"
    updated = cli.json("jobs", "update", job["id"], "--start-precision", "precise")
    assert updated["start_precision"] == "precise"
    made = cli.json(
        "jobs", "create", "--name", "q", "--type", "echo", "--rate", "1 minute", "--start-precision", "precise"
    )
    assert made["start_precision"] == "precise"


def test_an_unknown_start_precision_is_refused_naming_the_field(cli):
    result = cli("jobs", "create", "--name", "p", "--type", "echo", "--rate", "1 minute", "--start-precision", "ms")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "Error 422 Invalid input"
    assert "start_precision" in result.stderr
    assert cli.json("jobs", "list")["items"] == []
