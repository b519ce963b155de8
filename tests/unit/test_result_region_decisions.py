"""Where a run's result is read in a multi-region stack (tickwork.model.result_regions, docs/regions.md "Results")."""

from __future__ import annotations

import pytest
from tickwork.model.regions import RegionMode
from tickwork.model.result_regions import result_region_elsewhere, results_bucket_in
from tickwork.model.run import RunResult


def _result(region: str | None) -> RunResult:
    return RunResult(location="s3://b/k", sha256="x", bytes=1, region=region)


@pytest.mark.parametrize("mode", [RegionMode.STRONG, RegionMode.EVENTUAL])
def test_a_result_another_region_recorded_is_read_there(mode):
    assert result_region_elsewhere(mode, "us-west-2", _result("us-east-1")) == "us-east-1"


@pytest.mark.parametrize(
    ("mode", "result"),
    [
        (RegionMode.SINGLE, _result("us-east-1")),  # a single region reads only its own bucket
        (RegionMode.STRONG, _result("us-west-2")),  # this region's own: read already
        (RegionMode.STRONG, _result(None)),  # recorded before results named their region
        (RegionMode.EVENTUAL, None),  # no result recorded
    ],
    ids=["single", "own-region", "no-region", "no-result"],
)
def test_no_other_region_is_read(mode, result):
    assert result_region_elsewhere(mode, "us-west-2", result) is None


def test_another_regions_bucket_is_this_ones_with_its_region():
    assert results_bucket_in("tw-results-123456789012-us-east-1", "us-east-1", "eu-west-2") == (
        "tw-results-123456789012-eu-west-2"
    )


def test_a_bucket_not_named_for_its_region_gives_no_other_regions_name():
    with pytest.raises(ValueError, match="not named for its region"):
        results_bucket_in("tickwork-resultsbucket", "us-east-1", "us-west-2")


def test_a_single_regions_result_names_no_region_in_the_record():
    # The outcome's write dumps the result without its unset fields: the item is what it always was.
    assert RunResult(location="s3://b/k", sha256="x", bytes=1).model_dump(mode="json", exclude_none=True) == {
        "location": "s3://b/k",
        "sha256": "x",
        "bytes": 1,
    }
