"""`tickwork tenants get|set` against the real API handler (local mode: open, or with a keys file)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

DEFAULTS = {
    "weight": 1,
    "max_active_jobs": None,
    "max_runs_per_minute": None,
    "max_concurrent_runs": None,
    "dispatch_order": "edf",
}


def test_get_me_by_default(cli):
    assert cli.json("tenants", "get") == {"tenant": "default", "settings": DEFAULTS, "usage": {"active_jobs": None}}
    assert cli.json("tenants", "get", "me")["tenant"] == "default"


def test_set_replaces_the_whole_document_then_get_shows_it(cli):
    stored = cli.json(
        "tenants", "set", "acme", "--weight", "3", "--max-active-jobs", "2", "--max-concurrent-runs", "4",
        "--dispatch-order", "sjf",
    )  # fmt: skip
    assert stored == {
        "weight": 3,
        "max_active_jobs": 2,
        "max_runs_per_minute": None,
        "max_concurrent_runs": 4,
        "dispatch_order": "sjf",
    }
    assert cli.transport.sent[-1][0] == "PUT"
    shown = cli.json("tenants", "get", "acme")
    assert shown == {"tenant": "acme", "settings": stored, "usage": {"active_jobs": 0}}
    # An option left out is unset, not kept.
    assert cli.json("tenants", "set", "acme", "--max-runs-per-minute", "60") == {**DEFAULTS, "max_runs_per_minute": 60}


def test_a_tenant_name_with_a_slash_is_sent_encoded(cli):
    cli.json("tenants", "set", "210987654321:role/ops", "--weight", "2")
    assert cli.transport.sent[-1][1].endswith("/v1/tenants/210987654321%3Arole%2Fops")
    assert cli.json("tenants", "get", "210987654321:role/ops")["settings"]["weight"] == 2


def test_the_table_shows_one_row_per_setting(cli):
    cli.json("tenants", "set", "default", "--max-active-jobs", "5")
    shown = cli("tenants", "get", output="table")
    assert shown.exit_code == 0, shown.stderr
    rows = dict(line.split(None, 1) for line in shown.stdout.splitlines()[1:] if line.strip())
    assert rows["tenant"].strip() == "default"
    assert rows["max_active_jobs"].strip() == "5"
    assert rows["usage.active_jobs"].strip() == "0"


def test_out_of_range_options_are_refused_before_any_call(cli):
    for args in (("--weight", "0"), ("--weight", "101"), ("--max-active-jobs", "0")):
        refused = cli("tenants", "set", "acme", *args)
        assert refused.exit_code == 2, args
    assert cli.transport.sent == []


def test_help_says_set_replaces_the_whole_document(cli):
    shown = cli.runner.invoke(__import__("tickwork_cli.main", fromlist=["app"]).app, ["tenants", "set", "--help"])
    assert "replaces the tenant's whole settings" in " ".join(shown.stdout.split())


def test_a_key_that_is_not_an_admin_is_refused(cli, monkeypatch, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-acme": "acme", "k-ops": {"tenant": "ops", "admin": True}}))
    monkeypatch.setenv("API_KEYS_FILE", str(keys))
    refused = cli("tenants", "set", "acme", "--weight", "2", "--api-key", "k-acme")
    assert refused.exit_code == 1
    assert "Error 403" in refused.stderr
    assert "an admin is needed" in refused.stderr
    assert cli("tenants", "get", "acme", "--api-key", "k-acme").exit_code == 1
    assert cli.json("tenants", "get", "me", "--api-key", "k-acme")["tenant"] == "acme"
    assert cli.json("tenants", "set", "acme", "--weight", "2", "--api-key", "k-ops")["weight"] == 2
    assert cli.json("tenants", "get", "--api-key", "k-acme")["settings"]["weight"] == 2


def test_a_create_over_the_quota_says_so(cli):
    cli.json("tenants", "set", "default", "--max-active-jobs", "1")
    assert cli("jobs", "create", "--name", "a", "--type", "echo", "--rate", "1 hour").exit_code == 0
    refused = cli("jobs", "create", "--name", "b", "--type", "echo", "--rate", "1 hour")
    assert refused.exit_code == 1
    assert "Error 429" in refused.stderr
    assert "max_active_jobs" in refused.stderr
