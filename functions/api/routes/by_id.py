"""Routes that name one job or run by id, call one domain service method with the tenant and that id, and answer
what it returns: declared as data, since they differ only in that data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Tenant, Wired
from tickwork.models import Job, Run
from tickwork.services import Services

from routes.parameters import JobId, RunId
from routes.responses import json_response, ok, problems


@dataclass(frozen=True)
class ByIdRoute:
    name: str  # the route function's name, which the OpenAPI operationId starts with
    method: str
    rule: str  # with <job_id> or <run_id>
    summary: str
    call: Callable[[Services, str, str], Any]  # (services, tenant, id) -> the answer
    status: int
    answer: Any  # the success response as documented: ok(model, description), or a plain description
    problem_statuses: tuple[int, ...]

    def add_to(self, router: APIGatewayHttpRouter, tag: str) -> None:
        route = self._function()
        route.__name__ = route.__qualname__ = self.name
        responses = {self.status: self.answer, **problems(*self.problem_statuses)}
        router.route(self.rule, self.method, summary=self.summary, responses=responses, tags=[tag])(route)

    def _function(self) -> Callable[..., Any]:
        if "<job_id>" in self.rule:

            def by_job_id(job_id: JobId, built: Wired, tenant: Tenant):  # no return type: it would show in the document
                return json_response(self.status, self.call(built, tenant, job_id))

            return by_job_id

        def by_run_id(run_id: RunId, built: Wired, tenant: Tenant):
            return json_response(self.status, self.call(built, tenant, run_id))

        return by_run_id


# The jobs router's, then the runs router's, each in the order the document lists them.
BY_TAG: dict[str, list[ByIdRoute]] = {
    # One job, and its state changes: each answers the job (or, triggered, its run) as it now is, or 404 / 409.
    "jobs": [
        ByIdRoute(
            "get_job",
            "GET",
            "/v1/jobs/<job_id>",
            "One job",
            lambda s, tenant, i: s.queries.get_job(tenant, i),
            200,
            ok(Job, "The job"),
            (404,),
        ),
        ByIdRoute(
            "cancel_job",
            "DELETE",
            "/v1/jobs/<job_id>",
            "Cancel a job (idempotent)",
            lambda s, tenant, i: s.jobs.cancel(tenant, i),
            200,
            ok(Job, "The job, CANCELLED"),
            (404, 409),
        ),
        ByIdRoute(
            "pause_job",
            "POST",
            "/v1/jobs/<job_id>/pause",
            "Pause a job (idempotent)",
            lambda s, tenant, i: s.jobs.pause(tenant, i),
            200,
            ok(Job, "The job, PAUSED"),
            (404, 409),
        ),
        ByIdRoute(
            "resume_job",
            "POST",
            "/v1/jobs/<job_id>/resume",
            "Resume a job (idempotent); what was missed while paused follows the misfire rule",
            lambda s, tenant, i: s.jobs.resume(tenant, i),
            200,
            ok(Job, "The job, ACTIVE"),
            (404, 409),
        ),
        ByIdRoute(
            "trigger_job",
            "POST",
            "/v1/jobs/<job_id>/trigger",
            "Run a job now, once, outside its schedule",
            lambda s, tenant, i: s.jobs.trigger(tenant, i),
            202,
            ok(Run, "The run, QUEUED"),
            (404, 409),
        ),
    ],
    "runs": [
        ByIdRoute(
            "get_run",
            "GET",
            "/v1/runs/<run_id>",
            "One run",
            lambda s, tenant, i: s.queries.get_run(tenant, i),
            200,
            ok(Run, "The run"),
            (404,),
        ),
        ByIdRoute(
            "get_result",
            "GET",
            "/v1/runs/<run_id>/result",
            "The run's result document as stored in S3 (for echo, the payload)",
            lambda s, tenant, i: s.queries.get_result(tenant, i),
            200,
            {"description": "The result document (any JSON)"},
            (404,),
        ),
        ByIdRoute(
            "retry_run",
            "POST",
            "/v1/runs/<run_id>/retry",
            "Re-queue a FAILED run; attempts start again",
            lambda s, tenant, i: s.redrive.retry_run(tenant, i),
            202,
            ok(Run, "The run, QUEUED"),
            (404, 409),
        ),
    ],
}


def add_routes(router: APIGatewayHttpRouter, tag: str) -> None:
    for route in BY_TAG[tag]:
        route.add_to(router, tag)
