"""/v1/dead-letters: the band queues' SQS dead-letter queues (messages the executor could not process), read and
redriven by an admin. A tenant's FAILED runs are /v1/dlq's."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Admin, Wired
from tickwork.control.api_examples import DEAD_LETTER_REDRIVE, openapi_examples
from tickwork.control.dead_letters import DeadLetterQueueList, DeadLetterRedriveRequest, DeadLetterRedriveResult

from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()


@router.get(
    "/v1/dead-letters",
    summary="What each band's SQS dead-letter queue holds, and its latest redrive (admin only)",
    description="Messages the executor could not process (not FAILED runs: those are GET /v1/dlq).",
    responses={200: ok(DeadLetterQueueList, "One entry per band"), **problems()},
    tags=["dead-letters"],
)
def list_dead_letters(built: Wired, _admin: Admin):
    return json_response(200, built.dead_letters.queues_now())


@router.post(
    "/v1/dead-letters/redrive",
    summary="Move the named bands' SQS dead-letter messages back to their queues (admin only)",
    description="SQS's message move task, one per band, asynchronous: GET /v1/dead-letters shows its progress. "
    "409 when no queue named holds a message, or each is being moved already.",
    responses={202: ok(DeadLetterRedriveResult, "Moves started"), **problems(400, 409, 415)},
    tags=["dead-letters"],
)
def redrive_dead_letters(
    built: Wired,
    admin: Admin,
    by: Acting,
    request: Annotated[
        DeadLetterRedriveRequest,
        Body(description="The bands to redrive.", openapi_examples=openapi_examples(DEAD_LETTER_REDRIVE)),
    ],
):
    return json_response(202, built.dead_letters.redrive(request.bands, by=by, tenant=admin.tenant))
