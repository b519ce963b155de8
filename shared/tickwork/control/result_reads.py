"""A run's result as the API reads it, from whichever region holds it (docs/regions.md, "Results").

Each region's executors write results to their own region's bucket. This region's bucket is read first; in a
multi-region stack, a result not found there whose run names another region (`RunResult.region`) is read from that
region's bucket: one cross-region GetObject. If that region does not answer, the caller is told which region holds
the result (ResultRegionUnreachable), never that there is none. In a single region nothing but the local read is
made: the same requests as ever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from tickwork.aws.results import ResultStore
from tickwork.model.errors import ResultRegionUnreachable
from tickwork.model.regions import RegionMode
from tickwork.model.result_regions import result_region_elsewhere
from tickwork.model.run import Run
from tickwork.observability import logger


@dataclass(frozen=True)
class ResultReads:
    local: ResultStore
    other_region: Callable[[str], ResultStore]  # another region's results bucket, by region (built on first use)
    mode: RegionMode
    region: str

    def read(self, run: Run) -> Any | None:
        """The run's result document, or None if it has none (in this region, nor in the region it names)."""
        document = self.local.read(run)
        if document is not None:
            return document
        there = result_region_elsewhere(self.mode, self.region, run.result)
        if there is None:
            return None
        try:
            return self.other_region(there).read_of(run.tenant, run.job_id, run.id)
        except (ClientError, BotoCoreError) as exc:
            logger.warning(
                "another region's result unreadable", extra={"run_id": run.id, "region": there, "error": str(exc)}
            )
            raise ResultRegionUnreachable(run.id, there, run.status.value) from exc
