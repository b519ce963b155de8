"""A tenant's runs across all its jobs and workflows, newest first, filtered: the `runs-index`.

Every run item carries `runs_key` = `<tenant>#<shard>` (its job's shard of RUN_SEARCH_SHARDS) and `runs_sort` =
`<scheduled ms, 13 digits>#<run id>`, written once when the run is created. The index projects the keys and what a
search filters on; of those only `status`, `finished_at` and `error` ever change, each in a write that changes the
status, so a run's entry is written once per status it passes through (about 1 WRU each: QUEUED, RUNNING, SUCCEEDED
is 3). Heartbeats, checkpoints and progress leave it alone. A page's full runs come from the table (one
BatchGetItem).

The partition is sharded so that a tenant's burst of runs is spread over RUN_SEARCH_SHARDS index partitions (each
takes about 1,000 writes a second) rather than throttling one. A search reads every shard it can match (one, with
`job_ids` of one job), merges them newest first, and returns only runs newer than every unread part of every shard:
so pages are in order and none is skipped, though one may be short when a selective filter spends the request's
budget (then its cursor resumes where the reads stopped): tickwork.store.merged_query. An admin's search of every
tenant's runs (`tenant=*`) reads every shard of every known tenant (tickwork.store.tenants.KnownTenants) so.

The partition comes from the caller's tenant, never from the cursor, which carries only a position (`runs_sort`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.errors import InvalidInput
from tickwork.model.freezes import EVERY_TENANT
from tickwork.model.run import Run
from tickwork.model.states import RunStatus, RunTrigger
from tickwork.store.codec import RUN_SEARCH_SHARDS, expression_values, run_from_attrs, shard_of
from tickwork.store.conditional import Table
from tickwork.store.cursors import Cursors
from tickwork.store.listings import Page
from tickwork.store.merged_query import merged_page
from tickwork.store.tenants import KnownTenants

RUNS_INDEX = "runs-index"
# What a search filters on, besides the keys: template.yaml must list the same.
RUNS_INDEX_PROJECTION = (
    "job_id",
    "status",
    "trigger",
    "workflow_run_id",
    "finished_at",
    "error",
)
# One search request reads at most this many index pages in all (each up to 1 MB, or _FILTERED_PAGE entries).
MAX_SEARCH_QUERIES = 24
_FILTERED_PAGE = 200
# Job ids a search may name, as one IN (...) condition (DynamoDB takes up to 100 operands).
MAX_SEARCH_JOBS = 100
# How long before its scheduled instant a run may end: a skip the tick records when it claims (a calendar's, a
# freeze's) ends up to its claim horizon early. A search by end time reads runs scheduled up to this past its end.
ENDED_BEFORE_SCHEDULED = timedelta(hours=1)
# Past any run id's sort value: `<ms>#<run id>` sorts below `<ms>#~`.
_ABOVE = "~"


@dataclass(frozen=True)
class RunSearch:
    """What a search asks for. `job_ids`: only those jobs' and workflows' runs (None: all); `workflow_runs_only`:
    only workflow steps' runs; times are inclusive; `ended_*` reads runs scheduled up to `ended_to` and keeps
    those that ended in the window."""

    statuses: tuple[RunStatus, ...] = ()
    job_ids: tuple[str, ...] | None = None
    workflow_runs_only: bool = False
    trigger: RunTrigger | None = None
    error_type: str | None = None
    scheduled_from: datetime | None = None
    scheduled_to: datetime | None = None
    ended_from: datetime | None = None
    ended_to: datetime | None = None

    def __post_init__(self) -> None:
        if self.job_ids is not None and len(self.job_ids) > MAX_SEARCH_JOBS:
            raise InvalidInput.one("job_id", f"at most {MAX_SEARCH_JOBS} jobs in one search")

    def shards(self) -> list[str]:
        if self.job_ids is None:
            return [str(shard) for shard in range(RUN_SEARCH_SHARDS)]
        return sorted({shard_of(job_id, RUN_SEARCH_SHARDS) for job_id in self.job_ids})

    def sort_range(self, below: str | None) -> tuple[str, str]:
        """The `runs_sort` range to read, inclusive; `below`, a cursor's position, is read past (exclusive)."""
        ended_to = self.ended_to + ENDED_BEFORE_SCHEDULED if self.ended_to is not None else None
        upper_instant = min((t for t in (self.scheduled_to, ended_to) if t is not None), default=None)
        high = f"{to_ms(upper_instant):013d}#{_ABOVE}" if upper_instant is not None else _ABOVE
        if below is not None and below < high:
            high = below
        low = f"{to_ms(self.scheduled_from):013d}" if self.scheduled_from is not None else "0"
        return low, high

    def filter(self) -> tuple[list[str], dict[str, str], dict[str, Any]]:
        """The FilterExpression's conditions, names and values."""
        conditions: list[str] = []
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        if self.statuses:
            names["#status"] = "status"
            placeholders = []
            for i, status in enumerate(self.statuses):
                values[f"st{i}"] = status.value
                placeholders.append(f":st{i}")
            conditions.append(f"#status IN ({', '.join(placeholders)})")
        if self.job_ids is not None:
            names["#job_id"] = "job_id"
            for i, job_id in enumerate(self.job_ids):
                values[f"j{i}"] = job_id
            conditions.append(f"#job_id IN ({', '.join(f':j{i}' for i in range(len(self.job_ids)))})")
        if self.workflow_runs_only:
            conditions.append("attribute_exists(workflow_run_id)")
        if self.trigger is not None:
            names["#trigger"] = "trigger"
            values["trigger"] = self.trigger.value
            conditions.append("#trigger = :trigger")
        if self.error_type is not None:
            names |= {"#error": "error", "#error_type": "type"}
            values["error_type"] = self.error_type
            conditions.append("#error.#error_type = :error_type")
        if self.ended_from is not None or self.ended_to is not None:
            names["#finished_at"] = "finished_at"
            # Stored as ISO-8601 UTC with milliseconds (tickwork.model.clock.iso): ordered as text.
            if self.ended_from is not None:
                values["ended_from"] = iso(self.ended_from)
                conditions.append("#finished_at >= :ended_from")
            if self.ended_to is not None:
                values["ended_to"] = iso(self.ended_to)
                conditions.append("#finished_at <= :ended_to")
        return conditions, names, values


class RunSearchIndex:
    """Reads the runs-index for a tenant's searches; shares the store's `Table` and takes its cursors."""

    def __init__(self, table: Table, cursors: Cursors, known: KnownTenants) -> None:
        self._table = table
        self.cursors = cursors
        self.known = known

    def search(self, tenant: str, search: RunSearch, *, limit: int, cursor: str | None = None) -> Page[Run]:
        """The tenant's runs (EVERY_TENANT: every known tenant's, merged) that `search` matches, newest first."""
        below = self.cursors.decode(tenant, "run-search", cursor) if cursor else None
        low, high = search.sort_range(below)
        if low > high:
            return Page([], None)
        conditions, names, values = search.filter()
        base: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": RUNS_INDEX,
            "KeyConditionExpression": "runs_key = :rk AND runs_sort BETWEEN :low AND :high",
            "ScanIndexForward": False,
            "Limit": max(_FILTERED_PAGE, limit + 1) if conditions else limit + 1,
        }
        if conditions:
            base["FilterExpression"] = " AND ".join(conditions)
        if names:
            base["ExpressionAttributeNames"] = names
        tenants = self.known.every() if tenant == EVERY_TENANT else [tenant]
        requests = [
            {
                **base,
                "ExpressionAttributeValues": expression_values(rk=f"{owner}#{shard}", low=low, high=high, **values),
            }
            for owner in tenants
            for shard in search.shards()
        ]
        budget = max(MAX_SEARCH_QUERIES, len(requests))
        page = merged_page(
            self._table.client.query, requests, sort_attr="runs_sort", limit=limit, budget=budget, below=below
        )
        next_cursor = self.cursors.encode(tenant, "run-search", page.below) if page.below is not None else None
        return Page(self._runs(page.entries), next_cursor)

    def _runs(self, entries: Sequence[dict[str, Any]]) -> list[Run]:
        """The page's runs from the table, in the page's order; one deleted since (TTL) is left out."""
        if not entries:
            return []
        keys = [{"pk": {"S": e["pk"]}, "sk": {"S": e["sk"]}} for e in entries]
        by_key = {(i["pk"], i["sk"]): i for i in self._table.batch_get(keys)}
        return [run_from_attrs(by_key[(e["pk"], e["sk"])]) for e in entries if (e["pk"], e["sk"]) in by_key]
