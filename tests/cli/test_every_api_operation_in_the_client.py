"""Which operations of the API's OpenAPI document the typed Python client (tickwork_cli.api_client) has, and which it
has not yet, each named here: a new API operation, or one the client gains, changes this file."""

from __future__ import annotations

import json
from pathlib import Path

from tickwork_cli.api_client import OPERATIONS, Client

DOCUMENT = Path(__file__).resolve().parents[2] / "functions" / "api" / "openapi.json"

# The API's operations the client does not have yet (the CLI has them).
NOT_YET: set[tuple[str, str]] = {
    ("POST", "/v1/jobs/{job_id}/backfill"),
    ("POST", "/v1/bulk/jobs"),
    ("GET", "/v1/runs/{run_id}/result"),
    ("GET", "/v1/runs/{run_id}/logs"),
    ("POST", "/v1/runs/{run_id}/skip"),
    ("GET", "/v1/runs/stuck"),
    ("POST", "/v1/bulk/runs"),
    ("GET", "/v1/dlq"),
    ("POST", "/v1/dlq/redrive"),
    ("POST", "/v1/dlq/{run_id}/dismiss"),
    ("GET", "/v1/dead-letters"),
    ("POST", "/v1/dead-letters/redrive"),
    ("GET", "/v1/regions"),
    ("POST", "/v1/regions/failover"),
    ("DELETE", "/v1/workflows/{workflow_id}"),
    ("PATCH", "/v1/workflows/{workflow_id}"),
    ("GET", "/v1/workflows/{workflow_id}/runs"),
    ("POST", "/v1/workflows/{workflow_id}/pause"),
    ("POST", "/v1/workflows/{workflow_id}/resume"),
    ("GET", "/v1/workflow-runs/{workflow_run_id}"),
    ("POST", "/v1/workflow-runs/{workflow_run_id}/retry"),
    ("POST", "/v1/workflow-runs/{workflow_run_id}/cancel"),
    ("GET", "/v1/calendars/{calendar_id}"),
    ("PUT", "/v1/calendars/{calendar_id}"),
    ("DELETE", "/v1/calendars/{calendar_id}"),
    ("GET", "/v1/calendars/{calendar_id}/blocked"),
    ("GET", "/v1/freezes/{freeze_id}"),
    ("DELETE", "/v1/freezes/{freeze_id}"),
    ("GET", "/v1/me"),
    ("GET", "/v1/tenants/me"),
    ("GET", "/v1/tenants/{tenant}"),
    ("PUT", "/v1/tenants/{tenant}"),
    ("GET", "/v1/metrics"),
    ("GET", "/v1/metrics/catalogue"),
    ("GET", "/v1/audit"),
    ("GET", "/v1/health"),
    ("GET", "/v1/openapi.json"),
}


def _operations() -> set[tuple[str, str]]:
    paths = json.loads(DOCUMENT.read_text(encoding="utf-8"))["paths"]
    return {(method.upper(), path) for path, item in paths.items() for method in item if method != "parameters"}


def test_every_api_operation_is_in_the_client_or_named_as_not_yet():
    document = _operations()
    assert not set(OPERATIONS) & NOT_YET, "listed as not yet, but the client has it"
    assert set(OPERATIONS) - document == set(), "the client calls an operation the API does not document"
    assert NOT_YET - document == set(), "listed as not yet, but the API has no such operation"
    assert document - set(OPERATIONS) - NOT_YET == set(), "neither in the client nor listed in NOT_YET"


def test_each_operation_of_the_client_is_a_method_of_it():
    assert [name for name in OPERATIONS.values() if not callable(getattr(Client, name, None))] == []
