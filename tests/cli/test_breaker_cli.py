"""`tickwork jobs create/update` take the catch-up policy and the circuit breaker."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_create_and_update_with_catchup_and_a_breaker(cli):
    job = cli.json(
        "jobs", "create", "--name", "nightly", "--type", "echo", "--cron", "0 2 * * *",
        "--catchup", "NONE", "--failure-threshold", "3", "--cooldown-seconds", "300", "--max-cooldown-seconds", "3600",
    )  # fmt: skip
    assert job["catchup"] == "NONE"
    assert job["circuit_breaker"] == {"failure_threshold": 3, "cooldown_seconds": 300, "max_cooldown_seconds": 3600}
    updated = cli.json("jobs", "update", job["id"], "--catchup", "ALL")
    assert updated["catchup"] == "ALL"
    assert updated["circuit_breaker"]["failure_threshold"] == 3


def test_bad_catchup_or_breaker_options_are_refused_naming_the_field(cli):
    result = cli(
        "jobs", "create", "--name", "x", "--type", "echo", "--cron", "0 2 * * *",
        "--catchup", "SOMETIMES", "--failure-threshold", "0", "--cooldown-seconds", "60",
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "Error 422 Invalid input"
    assert "catchup" in result.stderr
    assert "circuit_breaker.failure_threshold" in result.stderr
    missing = cli("jobs", "create", "--name", "x", "--type", "echo", "--cron", "0 2 * * *", "--failure-threshold", "2")
    assert missing.exit_code == 1
    assert "circuit_breaker.cooldown_seconds" in missing.stderr
