"""Where a run's result is read in a multi-region stack (docs/regions.md, "Results"). Pure.

Each region's executors write results to that region's own bucket, and the result names that region
(`RunResult.region`). A region's API reads its own bucket first; not finding the result there, it reads the bucket of
the region the result names, when that is another region. The buckets' names differ only by their region's suffix
(`<stack>-results-<account>-<region>`, the template's `ResultsBucket` in a multi-region stack), so a region derives
another's from its own.
"""

from __future__ import annotations

from tickwork.model.regions import RegionMode
from tickwork.model.run import RunResult


def result_region_elsewhere(mode: RegionMode, here: str, result: RunResult | None) -> str | None:
    """The other region whose bucket holds the result, or None: a single region, no result recorded (or one recorded
    before results named their region), or the result is this region's own."""
    if mode is RegionMode.SINGLE or result is None or result.region is None or result.region == here:
        return None
    return result.region


def results_bucket_in(bucket: str, here: str, there: str) -> str:
    """The results bucket of region `there`, from this region's (`bucket`, in region `here`): the same name with the
    other region's suffix. ValueError when this bucket's name does not end in its region (it was not named so)."""
    suffix = f"-{here}"
    if not bucket.endswith(suffix):
        raise ValueError(
            f"the results bucket {bucket!r} is not named for its region {here!r}: cannot derive {there!r}'s"
        )
    return f"{bucket.removesuffix(suffix)}-{there}"
