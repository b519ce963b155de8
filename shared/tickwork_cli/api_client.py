"""A typed Python client of the Tickwork API, for a service that creates and reads its jobs (docs/jobs-as-code.md,
"The Python client").

    from tickwork_cli.api_client import Client
    from tickwork.control.api_bodies import JobSpec

    tickwork = Client("https://abc123.execute-api.eu-west-1.amazonaws.com")  # SigV4, the default credential chain
    job = tickwork.create_job(JobSpec.model_validate({"name": "remind", "type": "echo", "schedule": {"at": ...}}))
    for run in tickwork.list_runs(job.id): ...

Bodies and answers are the API's own pydantic models (tickwork.control.api_bodies and the core models it answers
with). It sends through the CLI's HTTP client (tickwork_cli.client: its SigV4 signing, API key and bearer token),
and adds what a program needs: listings as iterators that follow `next_cursor`, retries of 429 and 5xx with
exponential backoff and full jitter (not before a `Retry-After`), an Idempotency-Key on every job create, and one
exception type, ApiError, carrying the API's problem body.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from pydantic import BaseModel
from tickwork.control.api_bodies import (
    CalendarList,
    FreezeList,
    JobList,
    JobSpec,
    JobUpdate,
    JobVariantsView,
    Preview,
    RetryRequest,
    RunList,
    SchedulePreviewRequest,
    TriggeredRun,
    TriggerRequest,
    WorkflowList,
    WorkflowRun,
    WorkflowSpec,
)
from tickwork.jobtypes.http import retry_after_seconds
from tickwork.model.backoff import backoff_ceiling
from tickwork.model.calendars import Calendar, CalendarDefinition
from tickwork.model.freezes import Freeze, FreezeSpec
from tickwork.model.job import Job
from tickwork.model.policies import RetryPolicy
from tickwork.model.run import Run
from tickwork.model.workflow.definition import Workflow

from tickwork_cli import client as http
from tickwork_cli.client import DEFAULT_TIMEOUT_SECONDS, ApiError, ConfigError

__all__ = ["ApiError", "Client", "ConfigError"]

Model = TypeVar("Model", bound=BaseModel)
Body = BaseModel | Mapping[str, Any]

# Each operation the client has, by the OpenAPI document's method and path, and the method that calls it
# (tests/cli/test_every_api_operation_in_the_client.py holds it to the document).
OPERATIONS: dict[tuple[str, str], str] = {
    ("POST", "/v1/jobs"): "create_job",
    ("GET", "/v1/jobs"): "list_jobs",
    ("GET", "/v1/jobs/{job_id}"): "get_job",
    ("PATCH", "/v1/jobs/{job_id}"): "update_job",
    ("POST", "/v1/jobs/{job_id}/pause"): "pause_job",
    ("POST", "/v1/jobs/{job_id}/resume"): "resume_job",
    ("DELETE", "/v1/jobs/{job_id}"): "cancel_job",
    ("POST", "/v1/jobs/{job_id}/trigger"): "trigger_job",
    ("GET", "/v1/jobs/{job_id}/preview"): "preview_job",
    ("GET", "/v1/jobs/{job_id}/variants"): "job_variants",
    ("POST", "/v1/jobs/{job_id}/variants/{name}/promote"): "promote_variant",
    ("POST", "/v1/jobs/{job_id}/variants/{name}/rollback"): "rollback_variant",
    ("POST", "/v1/schedules/preview"): "preview_schedule",
    ("GET", "/v1/jobs/{job_id}/runs"): "list_runs",
    ("GET", "/v1/runs"): "search_runs",
    ("GET", "/v1/runs/{run_id}"): "get_run",
    ("POST", "/v1/runs/{run_id}/retry"): "retry_run",
    ("POST", "/v1/runs/{run_id}/cancel"): "cancel_run",
    ("POST", "/v1/workflows"): "create_workflow",
    ("GET", "/v1/workflows"): "list_workflows",
    ("GET", "/v1/workflows/{workflow_id}"): "get_workflow",
    ("POST", "/v1/workflows/{workflow_id}/trigger"): "trigger_workflow",
    ("GET", "/v1/calendars"): "list_calendars",
    ("POST", "/v1/calendars"): "create_calendar",
    ("GET", "/v1/freezes"): "list_freezes",
    ("POST", "/v1/freezes"): "create_freeze",
}

# Retried, as a service's own calls should be: the API refused for now (429), or failed (5xx) where sending the
# request again is safe (a read, a PUT or DELETE, or a create with its Idempotency-Key).
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
REPEATABLE_METHODS = frozenset({"GET", "PUT", "DELETE"})
DEFAULT_RETRY = RetryPolicy(max_attempts=4, backoff_seconds=0.5, max_backoff_seconds=20)

sleep = time.sleep  # tests play time


def _now() -> datetime:
    return datetime.now(UTC)


class Client:
    """The Tickwork API at `api_url` (the stack's ApiUrl, or a local runtime's http://127.0.0.1:3000).

    Authentication, one of: nothing (the default AWS credential chain signs with SigV4; a loopback URL is not
    signed), `credentials` (botocore Credentials to sign with instead), `token` (a bearer JWT, for the stack's
    token API) or `api_key` (X-Api-Key, for `tickwork dev --api-keys`). `retry` bounds the attempts of one call
    and its backoff (full jitter), `timeout` each attempt, in seconds."""

    def __init__(
        self,
        api_url: str,
        *,
        credentials: Any = None,
        token: str | None = None,
        api_key: str | None = None,
        profile: str | None = None,
        region: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        if sum(given is not None for given in (credentials, token, api_key)) > 1:
            raise ConfigError("give one of credentials, token or api_key")
        self._http = http.Client(
            api_url,
            api_key=api_key,
            token=token,
            profile=profile,
            region=region,
            always_sign=credentials is not None,
            credentials=credentials,
            timeout=timeout,
        )
        self._retry = retry

    # ------------------------------------------------------------ jobs

    def create_job(self, spec: JobSpec | Mapping[str, Any], *, idempotency_key: str | None = None) -> Job:
        """Create a job. The Idempotency-Key (a new one unless given) makes a retried create, or a repeat with the
        same key and body within 24 h, answer the job the first one created."""
        key = idempotency_key or uuid.uuid4().hex
        return self._one(Job, "POST", "/v1/jobs", body=spec, headers={"Idempotency-Key": key})

    def get_job(self, job_id: str) -> Job:
        return self._one(Job, "GET", f"/v1/jobs/{_segment(job_id)}")

    def list_jobs(
        self,
        *,
        state: str | None = None,
        type: str | None = None,  # the API's name for it
        name_prefix: str | None = None,
        tag: str | None = None,
        tenant: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Job]:
        """Every job that matches, newest first, a page at a time. `tag` is `key=value`."""
        query = {"state": state, "type": type, "name_prefix": name_prefix, "tag": tag, "tenant": tenant}
        return self._items(JobList, "/v1/jobs", query, page_size)

    def update_job(self, job_id: str, patch: JobUpdate | Mapping[str, Any]) -> Job:
        return self._one(Job, "PATCH", f"/v1/jobs/{_segment(job_id)}", body=patch)

    def pause_job(self, job_id: str) -> Job:
        return self._one(Job, "POST", f"/v1/jobs/{_segment(job_id)}/pause")

    def resume_job(self, job_id: str) -> Job:
        return self._one(Job, "POST", f"/v1/jobs/{_segment(job_id)}/resume")

    def cancel_job(self, job_id: str) -> Job:
        return self._one(Job, "DELETE", f"/v1/jobs/{_segment(job_id)}")

    def trigger_job(self, job_id: str, request: TriggerRequest | Mapping[str, Any] | None = None) -> TriggeredRun:
        """Run the job now, once (with `payload`, that payload; with `debounce`, in its window's run)."""
        return self._one(TriggeredRun, "POST", f"/v1/jobs/{_segment(job_id)}/trigger", body=request)

    def preview_job(self, job_id: str, *, count: int | None = None) -> Preview:
        return self._one(Preview, "GET", f"/v1/jobs/{_segment(job_id)}/preview", query={"count": count})

    def job_variants(self, job_id: str, *, window: str | None = None) -> JobVariantsView:
        """The job's baseline and variants over `window` (30m, 24h, 7d; the API's default: 24h) (docs/versions.md)."""
        return self._one(JobVariantsView, "GET", f"/v1/jobs/{_segment(job_id)}/variants", query={"window": window})

    def promote_variant(self, job_id: str, name: str) -> Job:
        return self._one(Job, "POST", f"/v1/jobs/{_segment(job_id)}/variants/{_segment(name)}/promote")

    def rollback_variant(self, job_id: str, name: str) -> Job:
        return self._one(Job, "POST", f"/v1/jobs/{_segment(job_id)}/variants/{_segment(name)}/rollback")

    def preview_schedule(self, request: SchedulePreviewRequest | Mapping[str, Any]) -> Preview:
        return self._one(Preview, "POST", "/v1/schedules/preview", body=request)

    # ------------------------------------------------------------ runs

    def get_run(self, run_id: str) -> Run:
        return self._one(Run, "GET", f"/v1/runs/{_segment(run_id)}")

    def list_runs(
        self, job_id: str, *, status: str | None = None, started: bool | None = None, page_size: int | None = None
    ) -> Iterator[Run]:
        """The job's runs, newest first."""
        query = {"status": status, "started": started}
        return self._items(RunList, f"/v1/jobs/{_segment(job_id)}/runs", query, page_size)

    def search_runs(self, *, page_size: int | None = None, **filters: Any) -> Iterator[Run]:
        """Runs across jobs and workflows, newest first: the filters of GET /v1/runs (status, job_id, workflow_id,
        type, tag, trigger, error_type, from, to, on, tenant); `from_` stands for `from`."""
        query = {name.rstrip("_"): value for name, value in filters.items()}
        return self._items(RunList, "/v1/runs", query, page_size)

    def retry_run(self, run_id: str, request: RetryRequest | Mapping[str, Any] | None = None) -> Run:
        return self._one(Run, "POST", f"/v1/runs/{_segment(run_id)}/retry", body=request)

    def cancel_run(self, run_id: str) -> Run:
        return self._one(Run, "POST", f"/v1/runs/{_segment(run_id)}/cancel")

    # ------------------------------------------------------------ workflows

    def create_workflow(self, spec: WorkflowSpec | Mapping[str, Any]) -> Workflow:
        return self._one(Workflow, "POST", "/v1/workflows", body=spec)

    def get_workflow(self, workflow_id: str) -> Workflow:
        return self._one(Workflow, "GET", f"/v1/workflows/{_segment(workflow_id)}")

    def list_workflows(
        self,
        *,
        state: str | None = None,
        name_prefix: str | None = None,
        tenant: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Workflow]:
        query = {"state": state, "name_prefix": name_prefix, "tenant": tenant}
        return self._items(WorkflowList, "/v1/workflows", query, page_size)

    def trigger_workflow(self, workflow_id: str) -> WorkflowRun:
        return self._one(WorkflowRun, "POST", f"/v1/workflows/{_segment(workflow_id)}/trigger")

    # ------------------------------------------------------------ calendars and freezes

    def list_calendars(self, *, tenant: str | None = None) -> list[Calendar]:
        return self._one(CalendarList, "GET", "/v1/calendars", query={"tenant": tenant}).items

    def create_calendar(self, definition: CalendarDefinition | Mapping[str, Any]) -> Calendar:
        return self._one(Calendar, "POST", "/v1/calendars", body=definition)

    def list_freezes(self, *, tenant: str | None = None) -> list[Freeze]:
        return self._one(FreezeList, "GET", "/v1/freezes", query={"tenant": tenant}).items

    def create_freeze(self, spec: FreezeSpec | Mapping[str, Any]) -> Freeze:
        return self._one(Freeze, "POST", "/v1/freezes", body=spec)

    # ------------------------------------------------------------ the exchange

    def _one(
        self,
        model: type[Model],
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Body | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Model:
        return model.model_validate(self._call(method, path, query, body, headers))

    def _items(
        self, page_model: type[BaseModel], path: str, query: Mapping[str, Any], page_size: int | None
    ) -> Iterator[Any]:
        """Each item of a listing, a page fetched when the last one is used up, to the page without next_cursor."""
        cursor: str | None = None
        while True:
            page = page_model.model_validate(self._call("GET", path, {**query, "limit": page_size, "cursor": cursor}))
            yield from getattr(page, "items")  # noqa: B009 - every listing's model has items and next_cursor
            cursor = getattr(page, "next_cursor")  # noqa: B009
            if not cursor:
                return

    def _call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Body | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        params = {name: _query_value(value) for name, value in (query or {}).items() if value is not None}
        target = path + (("?" + urlencode(params)) if params else "")
        sent = {"Accept": "application/json", "User-Agent": http.USER_AGENT, **(headers or {})}
        data = None if body is None else json.dumps(_jsonable(body), separators=(",", ":")).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        repeatable = method in REPEATABLE_METHODS or "Idempotency-Key" in sent
        attempt = 1
        while True:
            response = self._http.send(method, target, sent, data)
            if 200 <= response.status < 300:
                text = response.body.decode("utf-8", errors="replace")
                return json.loads(text) if text else None
            retried = response.status == 429 or (response.status in RETRIED_STATUSES and repeatable)
            if not retried or attempt >= self._retry.max_attempts:
                raise http.problem_error(response)
            sleep(self._wait(attempt, response))
            attempt += 1

    def _wait(self, attempt: int, response: http.HttpResponse) -> float:
        """Full jitter under the attempt's ceiling, and not before a Retry-After the API gave (up to the cap)."""
        jittered = random.random() * backoff_ceiling(self._retry, attempt)  # noqa: S311 - jitter, not a secret
        header = next((v for k, v in response.headers.items() if k.lower() == "retry-after"), None)
        asked = retry_after_seconds(header, _now())
        return jittered if asked is None else max(jittered, min(asked, self._retry.max_backoff_seconds))


def _segment(identifier: str) -> str:
    return quote(identifier, safe="")


def _query_value(value: Any) -> str:
    """A query parameter as the API reads it: an instant in ISO 8601, an enum by its value, a bool in lower case."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _jsonable(body: Body) -> Any:
    """A model as the API reads it: the fields that were set, by their wire names; a mapping as given."""
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(body)
