"""`tickwork runs search`: GET /v1/runs from the command line, its flags sent as the API's filters, relative
instants resolved by the CLI."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_runs_search_finds_runs_across_jobs_by_the_filters_given(cli):
    first = cli.json("jobs", "create", "--name", "a", "--type", "echo", "--rate", "1 day", "--tag", "team=pay")
    second = cli.json("jobs", "create", "--name", "b", "--type", "echo", "--rate", "1 day")
    runs = [cli.json("jobs", "trigger", job["id"]) for job in (first, second)]
    cli.pipeline.drain()

    every = cli.json("runs", "search", "--all")["items"]
    assert {r["id"] for r in every} == {r["id"] for r in runs}
    tagged = cli.json("runs", "search", "--tag", "team=pay", "--status", "SUCCEEDED", "--from", "-1h", "--ended")
    assert [r["id"] for r in tagged["items"]] == [runs[0]["id"]]
    assert cli.json("runs", "search", "--job", second["id"], "--trigger", "manual")["items"][0]["id"] == runs[1]["id"]
    assert cli.json("runs", "search", "--to", "-1h")["items"] == []

    table = cli("runs", "search", "--status", "SUCCEEDED", output="table").stdout.splitlines()
    assert table[0].split()[0] == "ID"
    assert len(table) == 3


def test_runs_search_with_a_bad_filter_exits_non_zero_naming_it(cli):
    result = cli("runs", "search", "--status", "DONE")
    assert result.exit_code != 0
    assert "status" in result.stderr
