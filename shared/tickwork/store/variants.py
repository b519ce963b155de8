"""A job's variants' runs: the window of its run records their stats are computed from (`VariantRuns`), and the
runs each variant ran to an end, counted on the job item (pk=JOB#<job_id>, sk=JOB) for its guard
(tickwork.executor.variant_guard): `variant_runs#<name>#ended` and `#failed`, numbers beside the job's fields, not
among them, so the count moves no version (a claim or a PATCH racing it still wins) and a replace keeps them
(tickwork.store.jobs.JOB_ATTRIBUTES); a replace that makes them stale removes them (`forget`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.model.variants import Tally, Variant, tally_attribute
from tickwork.store.codec import VARIANTS_JSON, deserialize, expression_values, job_key
from tickwork.store.conditional import Table

_PREFIX = "variant_runs#"


@dataclass(frozen=True)
class Counted:
    """The job's tallies as the count left them, and the variants it declares now, by name."""

    tallies: dict[str, Tally]
    declared: dict[str, Variant]
    # The count took a run more (False: it replaced a re-queued run's earlier FAILED end), so the guard looks.
    new_run: bool = True


class VariantTallies:
    def __init__(self, table: Table) -> None:
        self._table = table

    def count(self, job_id: str, variant: str, *, failed: bool, again: bool = False) -> Counted | None:
        """One more run of `variant` ended (FAILED or not): one UpdateItem (ADD), which returns the whole item at
        no extra read. None: the job is gone. `again`: a run that ended FAILED, was counted, and was re-queued
        (a retry by hand, a redrive) ended again: its end replaces that failure rather than adding a run, unless
        that failure's count is gone (a change of the variant forgot it), when it is a run of its own."""
        names = {"#ended": tally_attribute(variant, "ended"), "#failed": tally_attribute(variant, "failed")}
        if again:
            won, item = self._table.update_if_returning_new(
                job_key(job_id),
                "ADD #failed :change",
                "attribute_exists(pk) AND #ended > :zero AND #failed > :zero",
                names,
                expression_values(change=int(failed) - 1, zero=0),
            )
            if won:
                return replace(counted_of(item), new_run=False)
            if not item:
                return None
        won, item = self._table.update_if_returning_new(
            job_key(job_id),
            "ADD #ended :one, #failed :failed",
            "attribute_exists(pk)",
            names,
            expression_values(one=1, failed=int(failed)),
        )
        return counted_of(item) if won else None


def counted_of(item: dict[str, Any]) -> Counted:
    """The tallies and declared variants of a job item (as attributes)."""
    counts: dict[str, dict[str, int]] = {}
    for name, value in item.items():
        if name.startswith(_PREFIX):
            variant, _, field = name.removeprefix(_PREFIX).rpartition("#")
            counts.setdefault(variant, {})[field] = int(value)
    tallies = {name: Tally(c.get("ended", 0), c.get("failed", 0)) for name, c in counts.items()}
    declared = {v.name: v for v in (Variant.model_validate(d) for d in json.loads(item.get(VARIANTS_JSON) or "[]"))}
    return Counted(tallies, declared)


# The most run records a window's stats read: newest first, so a busy job's window is its latest MAX_WINDOW_RUNS.
MAX_WINDOW_RUNS = 5_000
# What the stats need of a run record (a projection bills the same reads; it keeps the answer small).
_STATS_PROJECTION = "run_id, #status, variant, attempts, duration_ms, handler_ms, wall_ms"


@dataclass(frozen=True)
class WindowRuns:
    runs: list[dict[str, Any]]
    truncated: bool  # more ended in the window than MAX_WINDOW_RUNS: the stats are of the latest
    pages: int  # Query requests made (each reads at most 1 MB)


class VariantRuns:
    def __init__(self, table: Table) -> None:
        self._table = table

    def ended_in(self, job_id: str, since: datetime, until: datetime, *, limit: int = MAX_WINDOW_RUNS) -> WindowRuns:
        """The job's SUCCEEDED and FAILED runs of occurrences in [since, until], newest first, at most `limit`: one
        Query of the job's partition by its run keys' range (never a Scan), eventually consistent, a page per MB.
        Its cost is the run records it reads: at about 2 KB each, 5,000 runs are 10 MB, about 1,250 read units
        (under $0.0002 on demand); a filter does not lower it (DynamoDB bills what the key range reads)."""
        params: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
            "FilterExpression": "#status IN (:succeeded, :failed)",
            "ProjectionExpression": _STATS_PROJECTION,
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": expression_values(
                pk=f"JOB#{job_id}",
                lo=f"RUN#{to_ms(since):013d}",
                hi=f"RUN#{to_ms(until):013d}~",
                succeeded="SUCCEEDED",
                failed="FAILED",
            ),
            "ScanIndexForward": False,
        }
        found: list[dict[str, Any]] = []
        pages = 0
        while len(found) < limit:
            page = self._table.client.query(**params)
            pages += 1
            found += [deserialize(item) for item in page.get("Items", [])]
            if not page.get("LastEvaluatedKey"):
                return WindowRuns(found[:limit], len(found) > limit, pages)
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return WindowRuns(found[:limit], True, pages)
