"""Tenant-scoped listings, page by page with opaque cursors (see `cursors`). What the API reads.

Listings are paginated Queries, never a Scan:
- a tenant's jobs, newest first: `tenant-index`, partition `T#<tenant>#JOB`;
- a tenant's FAILED runs (the DLQ), newest first: `tenant-index`, partition `T#<tenant>#FAILED`;
- a job's runs, newest first: the base table, partition `JOB#<job id>`, sort keys `RUN#...`;
- a tenant's workflows, newest first: `tenant-index`, partition `T#<tenant>#WORKFLOW`;
- a workflow's runs, newest first: partition `JOB#<workflow id>`, sort keys `RUN#...` (its steps' runs sort
  under `STEP#...`, apart);
- a tenant's audit records, newest first: partition `AUDIT#<tenant>`; every tenant's (an admin's view):
  `tenant-index`, partition `AUDIT#*` (tickwork.store.audit).

Every tenant's jobs, workflows or FAILED runs (an admin's `tenant=*`, EVERY_TENANT): each known tenant's partition
(KnownTenants), read at once and merged newest first (tickwork.store.merged_query), its cursor one position.

The partition a page reads always comes from the caller's tenant (and a job it owns), never from the cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from tickwork.model.audit import AuditRecord
from tickwork.model.errors import InvalidInput
from tickwork.model.freezes import EVERY_TENANT
from tickwork.model.ids import parse_run_id
from tickwork.model.job import Job
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.definition import Workflow
from tickwork.model.workflow.runs import WorkflowRunRecord
from tickwork.store.audit import AuditQuery, record_of
from tickwork.store.codec import (
    deserialize,
    expression_values,
    job_from_attrs,
    run_from_attrs,
    run_key,
    workflow_from_attrs,
    workflow_run_from_attrs,
)
from tickwork.store.conditional import Table
from tickwork.store.cursors import Cursors
from tickwork.store.due_index import TENANT_INDEX
from tickwork.store.merged_query import merged_page
from tickwork.store.reading import UNREADABLE, note_unreadable
from tickwork.store.tenants import KnownTenants

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
# A filtered listing reads at most this many pages per request; past it, the page is returned short, with
# a cursor (so one request's cost stays bounded however selective the filter is).
MAX_QUERY_PAGES = 10
_FILTERED_PAGE = 200

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


@dataclass
class _Filter:
    """A listing's FilterExpression, built one condition at a time."""

    conditions: list[str]
    names: dict[str, str]
    values: dict[str, Any]

    @classmethod
    def of(cls, **equal: Any) -> _Filter:
        """`attribute = value` for each keyword whose value is not None."""
        found = cls([], {}, {})
        for attribute, value in equal.items():
            if value is not None:
                found.add(f"#{attribute} = :{attribute}", attribute, value)
        return found

    def add(self, condition: str, attribute: str, value: Any, *, placeholder: str | None = None) -> None:
        self.conditions.append(condition)
        self.names[f"#{attribute}"] = attribute
        self.values[placeholder or attribute] = value


class Listings:
    """Reads a tenant's jobs, runs and DLQ page by page (EVERY_TENANT: every known tenant's). Shares the store's
    `Table`; takes its cursors."""

    def __init__(self, table: Table, cursors: Cursors, known: KnownTenants) -> None:
        self._table = table
        self.cursors = cursors
        self.known = known
        self._pages = TenantIndexPages(table, cursors, known)

    def list_jobs(
        self,
        tenant: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        state: JobState | None = None,
        job_type: str | None = None,
        name_prefix: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> Page[Job]:
        """The tenant's jobs, newest first (tenant-index, T#<tenant>#JOB); `tag` (key, value): those whose tag
        `key` is `value`, a condition on the `tags` map in the same FilterExpression (still one Query)."""
        return self._scheduled(
            tenant,
            "JOB",
            "jobs",
            job_from_attrs,
            limit,
            cursor,
            state=state,
            name_prefix=name_prefix,
            tag=tag,
            type=job_type,
        )

    def list_workflows(
        self,
        tenant: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        state: JobState | None = None,
        name_prefix: str | None = None,
    ) -> Page[Workflow]:
        """The tenant's workflows, newest first (tenant-index, T#<tenant>#WORKFLOW)."""
        return self._scheduled(
            tenant, "WORKFLOW", "workflows", workflow_from_attrs, limit, cursor, state=state, name_prefix=name_prefix
        )

    def _scheduled(
        self,
        tenant: str,
        kind: str,
        scope: str,
        convert: Callable[[dict[str, Any]], T],
        limit: int,
        cursor: str | None,
        *,
        state: JobState | None,
        name_prefix: str | None,
        tag: tuple[str, str] | None = None,
        **equal: Any,
    ) -> Page[T]:
        """Jobs or workflows of the tenant, newest first, filtered by state, name prefix and `equal`."""
        where = _Filter.of(state=state.value if state is not None else None, **equal)
        if name_prefix:
            where.add("begins_with(#name, :prefix)", "name", name_prefix, placeholder="prefix")
        if tag is not None:
            # The key goes in as an attribute name placeholder: a tag key may hold any character, dots included.
            key, value = tag
            where.add("#tags.#tag_key = :tag_value", "tags", value, placeholder="tag_value")
            where.names["#tag_key"] = key
        if tenant == EVERY_TENANT:
            return self._pages.every_tenant(kind, scope, where, limit, cursor, convert)
        partition = f"T#{tenant}#{kind}"
        start = None
        if cursor:
            sort = self.cursors.decode(tenant, scope, cursor)
            start = {
                "tenant_key": {"S": partition},
                "tenant_sort": {"S": sort},
                "pk": {"S": f"JOB#{sort.split('#', 1)[-1]}"},
                "sk": {"S": "JOB"},
            }
        return self._pages.page(tenant, scope, self._pages.tenant_index(partition, where), where, limit, start, convert)

    def list_failed_runs(self, tenant: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> Page[Run]:
        """The tenant's FAILED runs, newest failure first (tenant-index, T#<tenant>#FAILED)."""
        scope = "dlq"
        if tenant == EVERY_TENANT:
            return self._pages.every_tenant("FAILED", scope, _Filter.of(), limit, cursor, run_from_attrs)
        partition = f"T#{tenant}#FAILED"
        start = None
        if cursor:
            sort = self.cursors.decode(tenant, scope, cursor)
            run_id = sort.split("#", 1)[-1]
            if parse_run_id(run_id) is None:  # pragma: no cover - MACed, so we wrote it
                raise InvalidInput.one("cursor", "not a cursor from this listing")
            start = {"tenant_key": {"S": partition}, "tenant_sort": {"S": sort}, **run_key(run_id)}
        where = _Filter.of()
        return self._pages.page(
            tenant, scope, self._pages.tenant_index(partition, where), where, limit, start, run_from_attrs
        )

    def iter_failed_runs(self, tenant: str, *, max_items: int) -> Iterator[Run]:
        """Every FAILED run of the tenant, newest first, up to max_items (for redrive)."""
        cursor: str | None = None
        seen = 0
        while True:
            page = self.list_failed_runs(tenant, limit=MAX_LIMIT, cursor=cursor)
            for run in page.items:
                yield run
                seen += 1
                if seen >= max_items:
                    return
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def list_runs(
        self,
        tenant: str,
        job_id: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        status: RunStatus | None = None,
        started: bool = False,
    ) -> Page[Run]:
        """Runs of one job (which the caller must already have checked is the tenant's), newest first; `started`:
        only those that have started at least once, so the first is the job's last run: an attempt opened in this
        execution (`started_at`), or in an earlier one (`requeues`: a retry or redrive re-queues only a FAILED run,
        which had started, and measures its start afresh)."""
        return self._runs_of(tenant, job_id, "runs", run_from_attrs, limit, cursor, status, started=started)

    def list_workflow_runs(
        self,
        tenant: str,
        workflow_id: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        status: WorkflowRunStatus | None = None,
    ) -> Page[WorkflowRunRecord]:
        """Runs of one workflow (the caller's, checked by the caller), newest first; its steps' runs (STEP#...)
        are not among them."""
        return self._runs_of(tenant, workflow_id, "workflow-runs", workflow_run_from_attrs, limit, cursor, status)

    def _runs_of(
        self,
        tenant: str,
        owner_id: str,
        scope_name: str,
        convert: Callable[[dict[str, Any]], T],
        limit: int,
        cursor: str | None,
        status: StrEnum | None,
        *,
        started: bool = False,
    ) -> Page[T]:
        """The RUN# items of one job's or workflow's partition, newest first."""
        scope = f"{scope_name}:{owner_id}"
        pk = f"JOB#{owner_id}"
        start = None
        if cursor:
            sort = self.cursors.decode(tenant, scope, cursor)
            start = {"pk": {"S": pk}, "sk": {"S": sort}}
        where = _Filter.of(status=status.value if status is not None else None)
        if started:
            where.conditions.append("(attribute_exists(#started_at) OR #requeues > :no_requeues)")
            where.names.update({"#started_at": "started_at", "#requeues": "requeues"})
            where.values["no_requeues"] = 0
        query = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :run)",
            "ExpressionAttributeValues": expression_values(pk=pk, run="RUN#", **where.values),
            "ScanIndexForward": False,
        }
        return self._pages.page(tenant, scope, query, where, limit, start, convert)

    def list_audit(
        self, tenant: str | None, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None, **filters: Any
    ) -> Page[AuditRecord]:
        """Audit records, newest first: the tenant's, or (None) every tenant's; `filters` are AuditQuery's. Without
        transactions (tickwork.store.pending_audits), the records its requests left pending are settled first, and
        a pending record is never listed (every tenant's listing, tenant-index, has none)."""
        owner = tenant if tenant is not None else "*"
        older_than = self.cursors.decode(owner, "audit", cursor) if cursor else None
        query = AuditQuery(self._table.name, tenant, older_than=older_than, **filters)
        where = _Filter(query.conditions, query.names, {})
        if self._table.audited_writes is not None:
            self._table.audited_writes.settle_due(self._table)
            if tenant is not None:
                where.conditions.append("attribute_not_exists(#pending)")
                where.names["#pending"] = "pending"
        return self._pages.page(owner, "audit", query.params, where, limit, None, record_of, query.keep)


class TenantIndexPages:
    """How a listing reads its pages: one partition's Query, page by page with a cursor naming the last item
    returned, or every known tenant's partitions merged newest first; the index entries' full items from the
    table."""

    def __init__(self, table: Table, cursors: Cursors, known: KnownTenants) -> None:
        self._table = table
        self.cursors = cursors
        self.known = known

    def every_tenant(
        self,
        kind: str,
        scope: str,
        where: _Filter,
        limit: int,
        cursor: str | None,
        convert: Callable[[dict[str, Any]], T],
    ) -> Page[T]:
        """Every known tenant's partition T#<tenant>#<kind> of tenant-index, merged newest first: a Query of each
        (in parallel), then more of the one read least far while the page is not sure, within the same budget of
        pages a tenant's filtered listing has past those."""
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput.one("limit", f"must be between 1 and {MAX_LIMIT}")
        below = self.cursors.decode(EVERY_TENANT, scope, cursor) if cursor else None
        requests = []
        for tenant in self.known.every():
            query = self.tenant_index(f"T#{tenant}#{kind}", where)
            if below is not None:
                query["KeyConditionExpression"] += " AND tenant_sort < :below"
                query["ExpressionAttributeValues"] |= expression_values(below=below)
            if where.conditions:
                query["FilterExpression"] = " AND ".join(where.conditions)
                query["ExpressionAttributeNames"] = where.names
            query["Limit"] = max(_FILTERED_PAGE, limit + 1) if where.conditions else limit + 1
            requests.append(query)
        budget = len(requests) + MAX_QUERY_PAGES
        page = merged_page(
            self._table.client.query, requests, sort_attr="tenant_sort", limit=limit, budget=budget, below=below
        )
        next_cursor = self.cursors.encode(EVERY_TENANT, scope, page.below) if page.below is not None else None
        return Page(_readable(convert, self.full_items(page.entries)), next_cursor)

    def tenant_index(self, partition: str, where: _Filter) -> dict[str, Any]:
        """The Query of one tenant-index partition, newest first."""
        return {
            "TableName": self._table.name,
            "IndexName": TENANT_INDEX,
            "KeyConditionExpression": "tenant_key = :tk",
            "ExpressionAttributeValues": expression_values(tk=partition, **where.values),
            "ScanIndexForward": False,
        }

    def page(
        self,
        tenant: str,
        scope: str,
        query: dict[str, Any],
        where: _Filter,
        limit: int,
        start: dict[str, Any] | None,
        convert: Callable[[dict[str, Any]], T],
        keep: Callable[[T], bool] | None = None,
    ) -> Page[T]:
        """One page of `limit` items. Reads limit+1 to know whether there is more, so the last page says so.
        `keep`: a filter applied to the converted items, where the query cannot filter (the page may be short).

        The cursor names the last item returned (not DynamoDB's LastEvaluatedKey, which may lie past it).
        """

        def readable(items: list[dict[str, Any]]) -> list[T]:
            converted = _readable(convert, items)
            return [item for item in converted if keep(item)] if keep is not None else converted

        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput.one("limit", f"must be between 1 and {MAX_LIMIT}")
        # The position a cursor names: the sort key of the partition the query reads.
        sort_attr = "tenant_sort" if "IndexName" in query else "sk"
        kwargs = dict(query)
        if where.conditions:
            kwargs["FilterExpression"] = " AND ".join(where.conditions)
            kwargs["ExpressionAttributeNames"] = where.names
        if start:
            kwargs["ExclusiveStartKey"] = start
        found: list[dict[str, Any]] = []
        # tenant-index projects only what its filters read: the page's full items come from the table.
        full = self.full_items if "IndexName" in query else (lambda items: items)
        for _ in range(MAX_QUERY_PAGES):
            kwargs["Limit"] = max(_FILTERED_PAGE, limit + 1) if where.conditions else limit + 1 - len(found)
            page = self._table.client.query(**kwargs)
            for raw in page.get("Items", []):
                found.append(deserialize(raw))
                if len(found) > limit:
                    return Page(
                        readable(full(found[:limit])),
                        self.cursors.encode(tenant, scope, str(found[limit - 1][sort_attr])),
                    )
            last = page.get("LastEvaluatedKey")
            if not last:
                return Page(readable(full(found)), None)
            kwargs["ExclusiveStartKey"] = last
        # Budget spent on a selective filter: return what matched, and resume after what was read.
        resume = deserialize(kwargs["ExclusiveStartKey"])
        return Page(readable(full(found)), self.cursors.encode(tenant, scope, str(resume[sort_attr])))

    def full_items(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The table's items of these index entries, in their order (one BatchGetItem: a page is at most 100).
        One deleted since the query is left out."""
        if not entries:
            return []
        keys = [{"pk": {"S": e["pk"]}, "sk": {"S": e["sk"]}} for e in entries]
        by_key = {(i["pk"], i["sk"]): i for i in self._table.batch_get(keys)}
        return [by_key[(e["pk"], e["sk"])] for e in entries if (e["pk"], e["sk"]) in by_key]


def _readable(convert: Callable[[dict[str, Any]], T], items: list[dict[str, Any]]) -> list[T]:
    """The items converted; one the code cannot read is skipped (logged with its key, counted), so a single bad
    item never takes a whole listing down. The page may come out short; its cursor still moves past it."""
    converted: list[T] = []
    for attrs in items:
        try:
            converted.append(convert(attrs))
        except UNREADABLE as exc:
            note_unreadable(attrs, exc)
    return converted
