"""The typed client's runs: a job's, a search across them all, the stuck ones, one run, its result and logs; retry
(one, or many by their ids or a search's filters), skip, cancel; and the DLQ: its FAILED runs, their redrive and
dismissal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickwork.control.api_bodies import DlqEntry, DlqList, RedriveRequest, RedriveResult, RetryRequest, RunList, RunLogs
from tickwork.control.bulk_runs import BulkRunsRequest, BulkRunsResult
from tickwork.control.stuck_runs import StuckRunList
from tickwork.model.run import Run

from tickwork_cli.api_client.exchange import Listing, Part, segment

OPERATIONS = {
    ("GET", "/v1/jobs/{job_id}/runs"): "list_runs",
    ("GET", "/v1/runs"): "search_runs",
    ("GET", "/v1/runs/stuck"): "stuck_runs",
    ("GET", "/v1/runs/{run_id}"): "get_run",
    ("GET", "/v1/runs/{run_id}/result"): "run_result",
    ("GET", "/v1/runs/{run_id}/logs"): "run_logs",
    ("POST", "/v1/runs/{run_id}/retry"): "retry_run",
    ("POST", "/v1/bulk/runs"): "bulk_runs",
    ("POST", "/v1/runs/{run_id}/skip"): "skip_run",
    ("POST", "/v1/runs/{run_id}/cancel"): "cancel_run",
    ("GET", "/v1/dlq"): "list_dlq",
    ("POST", "/v1/dlq/redrive"): "redrive_dlq",
    ("POST", "/v1/dlq/{run_id}/dismiss"): "dismiss_run",
}


class Runs(Part):
    def get_run(self, run_id: str, *, tenant: str | None = None) -> Run:
        return self._exchange.one(Run, "GET", f"/v1/runs/{segment(run_id)}", query={"tenant": tenant})

    def list_runs(
        self, job_id: str, *, status: str | None = None, started: bool | None = None, page_size: int | None = None
    ) -> Listing[RunList, Run]:
        """The job's runs, newest first (`started`: only those that started at least once)."""
        query = {"status": status, "started": started}
        return Listing(self._exchange, RunList, f"/v1/jobs/{segment(job_id)}/runs", query, page_size)

    def search_runs(self, *, page_size: int | None = None, **filters: Any) -> Listing[RunList, Run]:
        """Runs across jobs and workflows, newest first: the filters of GET /v1/runs (status, job_id, workflow_id,
        type, tag, trigger, error_type, from, to, on, tenant); `from_` stands for `from`."""
        query = {name.rstrip("_"): value for name, value in filters.items()}
        return Listing(self._exchange, RunList, "/v1/runs", query, page_size)

    def stuck_runs(self, *, tenant: str | None = None, limit: int | None = None) -> StuckRunList:
        """Runs QUEUED well past their time or RUNNING past their lease, oldest first (one answer, capped)."""
        return self._exchange.one(StuckRunList, "GET", "/v1/runs/stuck", query={"tenant": tenant, "limit": limit})

    def run_result(self, run_id: str, *, tenant: str | None = None) -> Any:
        """The run's result document, as its handler returned it (any JSON: it has no model)."""
        return self._exchange.call("GET", f"/v1/runs/{segment(run_id)}/result", {"tenant": tenant})

    def run_logs(self, run_id: str) -> RunLogs:
        return self._exchange.one(RunLogs, "GET", f"/v1/runs/{segment(run_id)}/logs")

    def retry_run(self, run_id: str, request: RetryRequest | Mapping[str, Any] | None = None) -> Run:
        return self._exchange.one(Run, "POST", f"/v1/runs/{segment(run_id)}/retry", body=request)

    def bulk_runs(self, request: BulkRunsRequest | Mapping[str, Any]) -> BulkRunsResult:
        """Retry or redrive the runs named, or a page of those a search finds (send again with `next_cursor`)."""
        return self._exchange.one(BulkRunsResult, "POST", "/v1/bulk/runs", body=request)

    def skip_run(self, run_id: str) -> Run:
        return self._exchange.one(Run, "POST", f"/v1/runs/{segment(run_id)}/skip")

    def cancel_run(self, run_id: str) -> Run:
        return self._exchange.one(Run, "POST", f"/v1/runs/{segment(run_id)}/cancel")

    def list_dlq(self, *, tenant: str | None = None, page_size: int | None = None) -> Listing[DlqList, DlqEntry]:
        """The FAILED runs, newest first, each with whether a retry re-queues it."""
        return Listing(self._exchange, DlqList, "/v1/dlq", {"tenant": tenant}, page_size)

    def redrive_dlq(self, request: RedriveRequest | Mapping[str, Any]) -> RedriveResult:
        return self._exchange.one(RedriveResult, "POST", "/v1/dlq/redrive", body=request)

    def dismiss_run(self, run_id: str) -> Run:
        return self._exchange.one(Run, "POST", f"/v1/dlq/{segment(run_id)}/dismiss")
