"""Building answers, and documenting them in the OpenAPI document: JSON bodies and the problems a route may
answer with (problem+json, see problems.py)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from pydantic import BaseModel
from tickwork.control.api_bodies import PROBLEM_JSON, Problem


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    text = body.model_dump_json() if isinstance(body, BaseModel) else json.dumps(body, separators=(",", ":"))
    return Response(status_code=status, content_type="application/json", body=text, headers=headers)


def ok(model: Any, description: str) -> Any:
    return {"description": description, "content": {"application/json": {"model": model}}}


def linked(response: Any, parameter: str, operations: dict[str, tuple[str, str]]) -> Any:
    """The response, with OpenAPI links passing its body's `id` as `parameter` to each (method, path): what a
    client may call next with what it got (schemathesis's stateful phase follows them)."""
    links = {
        name: {"operationRef": _operation_ref(method, path), "parameters": {parameter: "$response.body#/id"}}
        for name, (method, path) in operations.items()
    }
    return {**response, "links": links}


def _operation_ref(method: str, path: str) -> str:
    """A JSON pointer to the operation in this document (RFC 6901: `~` is `~0`, `/` is `~1`)."""
    return f"#/paths/{path.replace('~', '~0').replace('/', '~1')}/{method.lower()}"


# What takes the id each kind of resource is created with, for the links of the responses that create one.
JOB_OPERATIONS = {
    "GetJob": ("GET", "/v1/jobs/{job_id}"),
    "UpdateJob": ("PATCH", "/v1/jobs/{job_id}"),
    "CancelJob": ("DELETE", "/v1/jobs/{job_id}"),
    "PauseJob": ("POST", "/v1/jobs/{job_id}/pause"),
    "ResumeJob": ("POST", "/v1/jobs/{job_id}/resume"),
    "TriggerJob": ("POST", "/v1/jobs/{job_id}/trigger"),
    "ListRuns": ("GET", "/v1/jobs/{job_id}/runs"),
    "PreviewJob": ("GET", "/v1/jobs/{job_id}/preview"),
    "BackfillJob": ("POST", "/v1/jobs/{job_id}/backfill"),
    "JobVariants": ("GET", "/v1/jobs/{job_id}/variants"),
    "PromoteVariant": ("POST", "/v1/jobs/{job_id}/variants/{name}/promote"),
    "RollbackVariant": ("POST", "/v1/jobs/{job_id}/variants/{name}/rollback"),
}
RUN_OPERATIONS = {
    "GetRun": ("GET", "/v1/runs/{run_id}"),
    "GetResult": ("GET", "/v1/runs/{run_id}/result"),
    "GetRunLogs": ("GET", "/v1/runs/{run_id}/logs"),
    "RetryRun": ("POST", "/v1/runs/{run_id}/retry"),
    "CancelRun": ("POST", "/v1/runs/{run_id}/cancel"),
    "SkipRun": ("POST", "/v1/runs/{run_id}/skip"),
    "DismissRun": ("POST", "/v1/dlq/{run_id}/dismiss"),
}
WORKFLOW_OPERATIONS = {
    "GetWorkflow": ("GET", "/v1/workflows/{workflow_id}"),
    "UpdateWorkflow": ("PATCH", "/v1/workflows/{workflow_id}"),
    "CancelWorkflow": ("DELETE", "/v1/workflows/{workflow_id}"),
    "PauseWorkflow": ("POST", "/v1/workflows/{workflow_id}/pause"),
    "ResumeWorkflow": ("POST", "/v1/workflows/{workflow_id}/resume"),
    "TriggerWorkflow": ("POST", "/v1/workflows/{workflow_id}/trigger"),
    "ListWorkflowRuns": ("GET", "/v1/workflows/{workflow_id}/runs"),
}
WORKFLOW_RUN_OPERATIONS = {
    "GetWorkflowRun": ("GET", "/v1/workflow-runs/{workflow_run_id}"),
    "CancelWorkflowRun": ("POST", "/v1/workflow-runs/{workflow_run_id}/cancel"),
    "RetryWorkflowRun": ("POST", "/v1/workflow-runs/{workflow_run_id}/retry"),
}


_PROBLEM_DESCRIPTIONS = {
    400: "Malformed request",
    401: "No caller identity (or no valid API key, locally)",
    403: "The caller's identity maps to no tenant (or the route is an admin's)",
    404: "Unknown id (or another tenant's)",
    409: "Conflicting state",
    413: "Payload too large",
    415: "The body is not JSON",
    422: "Invalid input, naming each field",
    429: "Over the tenant's quota (`quota`, `limit`, `current`); `Retry-After` when waiting helps",
    503: "Held in another region (`region`) that could not be read now; the run itself is readable",
}


def problems(*statuses: int) -> dict[int, Any]:
    """The route's problem answers, with those every route may give (401, 403, 422)."""
    every = sorted({401, 403, 422, *statuses})
    return {s: {"description": _PROBLEM_DESCRIPTIONS[s], "content": {PROBLEM_JSON: {"model": Problem}}} for s in every}
