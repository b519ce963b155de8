"""Resource provider: CloudFormation's custom resources Custom::TickworkJob, Custom::TickworkWorkflow and
Custom::TickworkCalendar (tickwork.control.cfn_provider). CloudFormation invokes it with a request; it answers with a
PUT of SUCCESS or FAILED to the request's pre-signed ResponseURL (tickwork.aws.cfn_responses)."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError
from tickwork.aws.cfn_responses import ResponseUrls
from tickwork.control.cfn_provider import CfnRequest, CfnResponse
from tickwork.model.errors import InvalidInput
from tickwork.observability import logger, observed
from tickwork.services import ServicesSlot
from tickwork.settings import ProviderSettings

_slot = ServicesSlot()
services = _slot.get  # the wiring, built on first use
use_services = _slot.set  # tests and the local runtime inject theirs


@cache
def response_urls() -> ResponseUrls:
    return ResponseUrls(loopback_allowed=ProviderSettings.from_env().loopback_response_urls)


@observed(correlation_id_path="RequestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # A request without what an answer needs (its URL, its ids) is not CloudFormation's: it cannot be answered.
    try:
        request = CfnRequest.model_validate(event)
    except ValidationError as exc:
        raise InvalidInput.from_validation(exc) from None
    urls = response_urls()
    urls.check(request.response_url)
    logger.append_keys(
        request_type=request.request_type, resource_type=request.resource_type, logical_id=request.logical_resource_id
    )
    try:
        response = services().resource_provider.handle(request)
    except Exception:  # an AWS error past the SDK's retries: answered FAILED, so the stack does not wait an hour
        logger.exception("custom resource request failed")
        response = request.refused(f"the request failed; try again (provider log: request {request.request_id})")
    answered = urls.put(request.response_url, response.body())
    logger.info("custom resource answered", extra={"status": response.Status, "http_status": answered})
    return _summary(response, answered)


def _summary(response: CfnResponse, answered: int) -> dict[str, Any]:
    return {"Status": response.Status, "PhysicalResourceId": response.PhysicalResourceId, "answered": answered}
