"""The typed client's workflows and their runs: create, list, read, change, pause, resume, cancel and trigger a
workflow; list a workflow's runs, read one, retry its failed steps, cancel it (compensating, if asked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickwork.control.api_bodies import (
    WorkflowList,
    WorkflowRun,
    WorkflowRunCancel,
    WorkflowRunList,
    WorkflowSpec,
    WorkflowUpdate,
)
from tickwork.model.workflow.definition import Workflow

from tickwork_cli.api_client.exchange import Listing, Part, segment

OPERATIONS = {
    ("POST", "/v1/workflows"): "create_workflow",
    ("GET", "/v1/workflows"): "list_workflows",
    ("GET", "/v1/workflows/{workflow_id}"): "get_workflow",
    ("PATCH", "/v1/workflows/{workflow_id}"): "update_workflow",
    ("POST", "/v1/workflows/{workflow_id}/pause"): "pause_workflow",
    ("POST", "/v1/workflows/{workflow_id}/resume"): "resume_workflow",
    ("DELETE", "/v1/workflows/{workflow_id}"): "cancel_workflow",
    ("POST", "/v1/workflows/{workflow_id}/trigger"): "trigger_workflow",
    ("GET", "/v1/workflows/{workflow_id}/runs"): "list_workflow_runs",
    ("GET", "/v1/workflow-runs/{workflow_run_id}"): "get_workflow_run",
    ("POST", "/v1/workflow-runs/{workflow_run_id}/retry"): "retry_workflow_run",
    ("POST", "/v1/workflow-runs/{workflow_run_id}/cancel"): "cancel_workflow_run",
}


class Workflows(Part):
    def create_workflow(self, spec: WorkflowSpec | Mapping[str, Any]) -> Workflow:
        return self._exchange.one(Workflow, "POST", "/v1/workflows", body=spec)

    def get_workflow(self, workflow_id: str, *, tenant: str | None = None) -> Workflow:
        return self._exchange.one(Workflow, "GET", f"/v1/workflows/{segment(workflow_id)}", query={"tenant": tenant})

    def list_workflows(
        self,
        *,
        state: str | None = None,
        name_prefix: str | None = None,
        tenant: str | None = None,
        page_size: int | None = None,
    ) -> Listing[WorkflowList, Workflow]:
        query = {"tenant": tenant, "state": state, "name_prefix": name_prefix}
        return Listing(self._exchange, WorkflowList, "/v1/workflows", query, page_size)

    def update_workflow(self, workflow_id: str, patch: WorkflowUpdate | Mapping[str, Any]) -> Workflow:
        return self._exchange.one(Workflow, "PATCH", f"/v1/workflows/{segment(workflow_id)}", body=patch)

    def pause_workflow(self, workflow_id: str) -> Workflow:
        return self._exchange.one(Workflow, "POST", f"/v1/workflows/{segment(workflow_id)}/pause")

    def resume_workflow(self, workflow_id: str) -> Workflow:
        return self._exchange.one(Workflow, "POST", f"/v1/workflows/{segment(workflow_id)}/resume")

    def cancel_workflow(self, workflow_id: str) -> Workflow:
        return self._exchange.one(Workflow, "DELETE", f"/v1/workflows/{segment(workflow_id)}")

    def trigger_workflow(self, workflow_id: str) -> WorkflowRun:
        return self._exchange.one(WorkflowRun, "POST", f"/v1/workflows/{segment(workflow_id)}/trigger")

    def list_workflow_runs(
        self, workflow_id: str, *, status: str | None = None, page_size: int | None = None
    ) -> Listing[WorkflowRunList, WorkflowRun]:
        """The workflow's runs, newest first, with each step's state."""
        path = f"/v1/workflows/{segment(workflow_id)}/runs"
        return Listing(self._exchange, WorkflowRunList, path, {"status": status}, page_size)

    def get_workflow_run(self, workflow_run_id: str, *, tenant: str | None = None) -> WorkflowRun:
        path = f"/v1/workflow-runs/{segment(workflow_run_id)}"
        return self._exchange.one(WorkflowRun, "GET", path, query={"tenant": tenant})

    def retry_workflow_run(self, workflow_run_id: str) -> WorkflowRun:
        return self._exchange.one(WorkflowRun, "POST", f"/v1/workflow-runs/{segment(workflow_run_id)}/retry")

    def cancel_workflow_run(
        self, workflow_run_id: str, request: WorkflowRunCancel | Mapping[str, Any] | None = None
    ) -> WorkflowRun:
        """Cancel a RUNNING workflow run; `{"compensate": true}` compensates the steps that succeeded."""
        path = f"/v1/workflow-runs/{segment(workflow_run_id)}/cancel"
        return self._exchange.one(WorkflowRun, "POST", path, body=request)
