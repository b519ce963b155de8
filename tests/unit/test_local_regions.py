"""`tickwork dev --regions`: what it refuses, before anything starts, and its control API's answers to what it does not
know (tickwork_local.runtime.regions). The regions themselves run in tests/e2e/test_regions_e2e.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from tickwork_cli.main import app
from tickwork_local.runtime.regions import LocalRegions, RegionsOptions, parse_regions
from typer.testing import CliRunner


def test_two_or_three_aws_regions_are_taken() -> None:
    assert parse_regions("us-east-1, eu-west-2") == ["us-east-1", "eu-west-2"]
    assert parse_regions("us-east-1,us-west-2,ap-southeast-1") == ["us-east-1", "us-west-2", "ap-southeast-1"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("a,b", "AWS region names"),
        ("us-east-1", "two or three"),
        ("us-east-1,us-east-2,us-west-1,us-west-2", "two or three"),
        ("us-east-1,us-east-1", "two or three different"),
    ],
)
def test_anything_else_is_refused(value: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_regions(value)


def test_a_mode_other_than_strong_or_eventual_is_refused() -> None:
    with pytest.raises(ValueError, match="strong or eventual"):
        LocalRegions(RegionsOptions(regions=["us-east-1", "us-west-2"], mode="active-active"))


@pytest.mark.parametrize("mode", ["strong", "eventual"])
def test_the_nodes_run_as_a_stack_of_the_global_table_in_its_mode(mode: str) -> None:
    """The nodes' functions read REGION_MODE (in eventual the fence reads the region-role item), and their results
    buckets are named for their regions, so that each region's API reads another's (docs/regions.md, "Results")."""
    given = {"LeaseSeconds": "10"}
    regions = LocalRegions(RegionsOptions(regions=["us-east-1", "us-west-2"], mode=mode, parameters=given))
    assert regions._node_parameters() == {
        "LeaseSeconds": "10",
        "RegionMode": mode,
        "GlobalTableName": "tickwork-JobsTable",
        "GlobalTableRegions": "us-east-1,us-west-2",
    }


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--regions", "us-east-1,us-west-2", "--attach", "http://127.0.0.1:1"], "no --attach, --built or --idp"),
        (["--regions", "east,west"], "AWS region names"),
        (["--regions", "us-east-1,us-west-2", "--region-mode", "sometimes"], "strong or eventual"),
    ],
)
def test_the_command_refuses_them_before_starting_anything(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["dev", *args])
    assert result.exit_code == 2
    assert says in result.output


@pytest.fixture
def control_url() -> Iterator[str]:
    regions = LocalRegions(RegionsOptions(regions=["us-east-1", "us-west-2"], mode="strong"))
    regions._start_control()
    yield regions.control_url
    assert regions.control is not None
    regions.control.shutdown()


def _post(url: str) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_killing_a_region_that_is_not_there_is_a_404_naming_those_that_are(control_url: str) -> None:
    status, body = _post(f"{control_url}/eu-west-1/kill")
    assert status == 404
    assert body == {"message": "no region eu-west-1: us-east-1, us-west-2"}


def test_another_path_is_a_404_saying_what_there_is(control_url: str) -> None:
    status, body = _post(f"{control_url}/us-east-1/pause")
    assert status == 404
    assert body == {"message": "POST /regions/REGION/kill"}
