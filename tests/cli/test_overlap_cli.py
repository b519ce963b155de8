"""`--overlap` on `tickwork jobs create` and `update` (issue 14: the CLI covers every policy field)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_create_and_update_with_an_overlap_policy(cli):
    job = cli.json("jobs", "create", "--name", "o", "--type", "echo", "--rate", "1 minute", "--overlap", "BUFFER_ONE")
    assert job["overlap"] == "BUFFER_ONE"
    updated = cli.json("jobs", "update", job["id"], "--overlap", "CANCEL_OTHER")
    assert updated["overlap"] == "CANCEL_OTHER"


def test_an_unknown_overlap_policy_is_refused_naming_the_field(cli):
    result = cli("jobs", "create", "--name", "o", "--type", "echo", "--rate", "1 minute", "--overlap", "SOMETIMES")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "Error 422 Invalid input"
    assert "overlap" in result.stderr
    assert cli.json("jobs", "list")["items"] == []
