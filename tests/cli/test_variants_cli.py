"""`tickwork jobs create|update --variants`, `jobs variants` (JSON and a table), `jobs promote-variant` and
`jobs rollback-variant` (docs/versions.md)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

V2 = '[{"name": "v2", "weight": 10, "payload": {"greeting": "hej"}}]'


def _job(cli) -> dict:
    return cli.json("jobs", "create", "--name", "ab", "--type", "echo", "--rate", "1 hour", "--variants", V2)


def test_variants_are_set_shown_promoted_and_rolled_back(cli):
    job = _job(cli)
    assert [v["name"] for v in job["variants"]] == ["v2"]
    view = cli.json("jobs", "variants", job["id"], "--window", "7d")
    assert [(v["name"], v["weight"], v["runs"]) for v in view["variants"]] == [("baseline", 90, 0), ("v2", 10, 0)]
    table = cli("jobs", "variants", job["id"], output="table").stdout.splitlines()
    assert table[0].split()[:3] == ["VARIANT", "WEIGHT", "RUNS"]
    assert table[1].split()[:3] == ["baseline", "90%", "0"]
    promoted = cli.json("jobs", "promote-variant", job["id"], "v2")
    assert (promoted["payload"], promoted["variants"]) == ({"greeting": "hej"}, [])
    updated = cli.json("jobs", "update", job["id"], "--variants", json.dumps([{"name": "v3", "weight": 5}]))
    assert [v["name"] for v in updated["variants"]] == ["v3"]
    rolled = cli.json("jobs", "rollback-variant", job["id"], "v3")
    assert (rolled["variants"], rolled["variant_rollback"]["variant"]) == ([], "v3")


@pytest.mark.parametrize(("given", "said"), [("{", "not JSON"), ('{"name": "v2"}', "a JSON list")])
def test_a_variants_flag_that_is_not_a_list_is_refused_before_any_call(cli, given, said):
    result = cli("jobs", "create", "--name", "ab", "--type", "echo", "--rate", "1 hour", "--variants", given)
    assert result.exit_code != 0
    assert said in result.stderr
    assert cli.json("jobs", "list")["items"] == []


def test_an_unknown_variant_is_an_error_naming_it(cli):
    job = _job(cli)
    result = cli("jobs", "promote-variant", job["id"], "v9")
    assert result.exit_code == 1
    assert "no variant 'v9'" in result.stderr
