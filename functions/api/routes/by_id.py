"""Routes that name one job, run, workflow or workflow run by id, call one domain service method with the caller,
that id and the request's attribution (for a change's audit record), and answer what it returns: declared as data,
since they differ only in that data. A read passes the caller's admin flag (an admin reads any tenant's item: ids
are unique across tenants), and takes `tenant` as the listings do (an admin naming one reads only that tenant's); a
change is the caller's own tenant's."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Who, Wired, workflows_of
from tickwork.control.api_bodies import WorkflowRun
from tickwork.control.callers import Caller
from tickwork.model.audit import Attribution
from tickwork.model.job import Job
from tickwork.model.run import Run
from tickwork.model.workflow.definition import Workflow
from tickwork.services import Services

from routes.parameters import JobId, ReadTenant, RunId, WorkflowId, WorkflowRunId
from routes.responses import WORKFLOW_RUN_OPERATIONS, json_response, linked, ok, problems


@dataclass(frozen=True)
class ByIdRoute:
    name: str  # the route function's name, which the OpenAPI operationId starts with
    method: str
    rule: str  # with one id: <job_id>, <run_id>, <workflow_id> or <workflow_run_id>
    summary: str
    call: Callable[[Services, Caller, str, Attribution], Any]  # (services, caller, id, by) -> the answer
    status: int
    answer: Any  # the success response as documented: ok(model, description), or a plain description
    problem_statuses: tuple[int, ...]

    def add_to(self, router: APIGatewayHttpRouter, tag: str) -> None:
        route = self._function()
        route.__name__ = route.__qualname__ = self.name
        responses = {self.status: self.answer, **problems(*self.problem_statuses)}
        router.route(self.rule, self.method, summary=self.summary, responses=responses, tags=[tag])(route)

    def _function(self) -> Callable[..., Any]:
        """The route function: the id named in the rule as its path parameter, then the wiring and the caller.
        Powertools reads the signature (and, for dependencies, the annotations), so both are set here."""
        id_name = self.rule[self.rule.index("<") + 1 : self.rule.index(">")]

        # No return type: it would show.
        def by_id(built: Services, who: Caller, by: Attribution, tenant: str | None = None, **ids: str):
            return json_response(self.status, self.call(built, who.reader_for(tenant), ids[id_name], by))

        annotations = {id_name: ID_PARAMETERS[id_name], "built": Wired, "who": Who, "by": Acting}
        if self.method == "GET":
            annotations["tenant"] = ReadTenant
        by_id.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [
                inspect.Parameter(
                    name,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=a,
                    default=None if name == "tenant" else inspect.Parameter.empty,
                )
                for name, a in annotations.items()
            ]
        )
        by_id.__annotations__ = annotations
        return by_id


# The path parameter each rule's <id> is.
ID_PARAMETERS: dict[str, Any] = {
    "job_id": JobId,
    "run_id": RunId,
    "workflow_id": WorkflowId,
    "workflow_run_id": WorkflowRunId,
}


# The jobs router's, the runs router's, then the workflows router's, each in the order the document lists them.
BY_TAG: dict[str, list[ByIdRoute]] = {
    # One job, and its state changes: each answers the job (or, triggered, its run) as it now is, or 404 / 409.
    "jobs": [
        ByIdRoute(
            "get_job",
            "GET",
            "/v1/jobs/<job_id>",
            "One job",
            lambda s, who, i, by: s.queries.show_job(who.tenant, i, admin=who.admin),
            200,
            ok(Job, "The job"),
            (404,),
        ),
        ByIdRoute(
            "cancel_job",
            "DELETE",
            "/v1/jobs/<job_id>",
            "Cancel a job (idempotent)",
            lambda s, who, i, by: s.jobs.cancel(who.tenant, i, by=by),
            200,
            ok(Job, "The job, CANCELLED"),
            (404, 409),
        ),
        ByIdRoute(
            "pause_job",
            "POST",
            "/v1/jobs/<job_id>/pause",
            "Pause a job (idempotent)",
            lambda s, who, i, by: s.jobs.pause(who.tenant, i, by=by),
            200,
            ok(Job, "The job, PAUSED"),
            (404, 409),
        ),
        ByIdRoute(
            "resume_job",
            "POST",
            "/v1/jobs/<job_id>/resume",
            "Resume a job (idempotent); what was missed while paused follows the misfire rule",
            lambda s, who, i, by: s.queries.shown(s.jobs.resume(who.tenant, i, by=by)),
            200,
            ok(Job, "The job, ACTIVE"),
            (404, 409),
        ),
    ],
    "runs": [
        ByIdRoute(
            "get_run",
            "GET",
            "/v1/runs/<run_id>",
            "One run",
            lambda s, who, i, by: s.queries.get_run(who.tenant, i, admin=who.admin),
            200,
            ok(Run, "The run"),
            (404,),
        ),
        ByIdRoute(
            "get_result",
            "GET",
            "/v1/runs/<run_id>/result",
            "The run's result document as stored in S3 (for echo, the payload)",
            lambda s, who, i, by: s.queries.get_result(who.tenant, i, admin=who.admin),
            200,
            {"description": "The result document (any JSON)"},
            (404, 503),
        ),
        ByIdRoute(
            "cancel_run",
            "POST",
            "/v1/runs/<run_id>/cancel",
            "Ask a RUNNING run (or a durable run between its segments) to stop: it is recorded SKIPPED `cancelled`",
            lambda s, who, i, by: s.run_cancel.cancel_run(who.tenant, i, by=by),
            202,
            ok(Run, "The run, asked to stop (still RUNNING until its executor sees the request)"),
            (404, 409),
        ),
        ByIdRoute(
            "skip_run",
            "POST",
            "/v1/runs/<run_id>/skip",
            "Skip a FAILED run that blocks its ordering key: the key's next run goes; the run stays FAILED",
            lambda s, who, i, by: s.ordering_keys.skip(who.tenant, i, by=by),
            200,
            ok(Run, "The run, FAILED, out of its key's queue"),
            (404, 409),
        ),
    ],
    # One workflow and its state changes, then one workflow run: each answers it as it now is, or 404 / 409.
    "workflows": [
        ByIdRoute(
            "get_workflow",
            "GET",
            "/v1/workflows/<workflow_id>",
            "One workflow",
            lambda s, who, i, by: s.queries.shown(workflows_of(s).get(who.tenant, i, admin=who.admin)),
            200,
            ok(Workflow, "The workflow"),
            (404,),
        ),
        ByIdRoute(
            "cancel_workflow",
            "DELETE",
            "/v1/workflows/<workflow_id>",
            "Cancel a workflow: it has no new workflow runs",
            lambda s, who, i, by: workflows_of(s).cancel(who.tenant, i, by=by),
            200,
            ok(Workflow, "The workflow, CANCELLED"),
            (404, 409),
        ),
        ByIdRoute(
            "pause_workflow",
            "POST",
            "/v1/workflows/<workflow_id>/pause",
            "Pause a workflow: its occurrences are recorded SKIPPED `paused`; runs in progress go on",
            lambda s, who, i, by: workflows_of(s).pause(who.tenant, i, by=by),
            200,
            ok(Workflow, "The workflow, PAUSED"),
            (404, 409),
        ),
        ByIdRoute(
            "resume_workflow",
            "POST",
            "/v1/workflows/<workflow_id>/resume",
            "Resume a paused workflow; what was missed while paused follows the misfire rule",
            lambda s, who, i, by: s.queries.shown(workflows_of(s).resume(who.tenant, i, by=by)),
            200,
            ok(Workflow, "The workflow, ACTIVE"),
            (404, 409),
        ),
        ByIdRoute(
            "trigger_workflow",
            "POST",
            "/v1/workflows/<workflow_id>/trigger",
            "Run a workflow now, once, outside its schedule: its root steps are queued",
            lambda s, who, i, by: workflows_of(s).trigger(who.tenant, i, by=by),
            202,
            linked(ok(WorkflowRun, "The workflow run, RUNNING"), "workflow_run_id", WORKFLOW_RUN_OPERATIONS),
            (404, 409),
        ),
        ByIdRoute(
            "get_workflow_run",
            "GET",
            "/v1/workflow-runs/<workflow_run_id>",
            "One workflow run, with every step's state",
            lambda s, who, i, by: workflows_of(s).get_run(who.tenant, i, admin=who.admin),
            200,
            ok(WorkflowRun, "The workflow run"),
            (404,),
        ),
        ByIdRoute(
            "retry_workflow_run",
            "POST",
            "/v1/workflow-runs/<workflow_run_id>/retry",
            "Re-run a FAILED workflow run's FAILED steps and the steps skipped because of them; nothing that "
            "succeeded runs again",
            lambda s, who, i, by: workflows_of(s).retry_run(who.tenant, i, by=by),
            202,
            ok(WorkflowRun, "The workflow run, RUNNING"),
            (404, 409),
        ),
    ],
}


def add_routes(router: APIGatewayHttpRouter, tag: str) -> None:
    for route in BY_TAG[tag]:
        route.add_to(router, tag)
