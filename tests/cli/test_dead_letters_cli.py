"""`tickwork dead-letters list|redrive` against the real API handler (local mode: open, an admin; or a keys file)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _poison(cli, band: str, count: int = 1) -> None:
    for i in range(count):
        cli.pipeline.sqs.send_message(QueueUrl=cli.pipeline.resources.dlq_urls[band], MessageBody=f"poison {i}")


def test_list_shows_each_band_and_redrive_moves_them_back(cli):
    _poison(cli, "low", 2)
    listed = cli.json("dead-letters", "list")
    assert [(q["band"], q["messages"]) for q in listed["items"]] == [("high", 0), ("normal", 0), ("low", 2)]
    assert cli.json("dead-letters", "redrive") == {"started": ["low"], "empty": ["high", "normal"], "running": []}
    assert cli.transport.sent[-1][0] == "POST"
    (low,) = [q for q in cli.json("dead-letters", "list")["items"] if q["band"] == "low"]
    assert low["messages"] == 0
    assert (low["last_redrive"]["status"], low["last_redrive"]["moved"]) == ("COMPLETED", 2)
    shown = cli("dead-letters", "list", output="table")
    assert shown.exit_code == 0, shown.stderr
    assert "COMPLETED 2/2" in shown.stdout


def test_redrive_of_one_band(cli):
    _poison(cli, "high")
    _poison(cli, "normal")
    shown = cli("dead-letters", "redrive", "--band", "normal", output="table")
    assert shown.exit_code == 0, shown.stderr
    assert "moving back: normal" in shown.stdout
    assert json.loads(cli.transport.sent[-1][3]) == {"bands": ["normal"]}
    items = {q["band"]: q["messages"] for q in cli.json("dead-letters", "list")["items"]}
    assert items == {"high": 1, "normal": 0, "low": 0}


def test_nothing_to_redrive_exits_1_with_the_409(cli):
    refused = cli("dead-letters", "redrive")
    assert refused.exit_code == 1
    assert "Error 409" in refused.stderr
    assert "nothing to redrive" in refused.stderr


def test_an_unknown_band_is_refused_before_any_call(cli):
    refused = cli("dead-letters", "redrive", "--band", "urgent")
    assert refused.exit_code == 2
    assert cli.transport.sent == []


def test_a_key_that_is_not_an_admin_is_refused(cli, monkeypatch, tmp_path):
    _poison(cli, "low")
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-acme": "acme", "k-ops": {"tenant": "ops", "admin": True}}))
    monkeypatch.setenv("API_KEYS_FILE", str(keys))
    for args in (("list",), ("redrive",)):
        refused = cli("dead-letters", *args, "--api-key", "k-acme")
        assert refused.exit_code == 1
        assert "Error 403" in refused.stderr
        assert "an admin is needed" in refused.stderr
    assert cli.json("dead-letters", "redrive", "--api-key", "k-ops")["started"] == ["low"]
