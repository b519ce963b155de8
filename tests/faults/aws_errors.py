"""The fault suite's AWS error scenarios: one kind of error each, injected by the local runtime's injector
(tickwork_local.aws.faults) at a seeded rate into every client a session builds.

What runs first: moto (`mock_aws`, in-process) answers requests from a `before-send` handler too, one of
botocore's built-in handlers. The injector is registered on the session with `register_first`, so it runs
before moto's. But botocore calls every `before-send` handler (`emit`, not `emit_until_response`) and uses the
first answer: moto would still carry out a request the injector answered with an error. A connection error is
raised, which ends the emit before moto sees the request; an error answer marks the request (`REFUSED`), and
`skipping_refused` makes moto pass over marked requests: an injected throttle, 5xx or SlowDown is refused, as
AWS refuses it, never carried out and then misreported. Each SDK retry passes through the hook again.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from moto.core.botocore_stubber import BotocoreStubber
from tickwork_local.aws.faults import CONNECT_TIMEOUT, ENDPOINT_UNREACHABLE, REFUSED, AwsErrorInjector, ErrorKind

_SERVICES = ("dynamodb", "sqs", "s3")


class AwsErrorKind(StrEnum):
    DYNAMODB_THROUGHPUT_EXCEEDED = "dynamodb ProvisionedThroughputExceededException"
    DYNAMODB_THROTTLING = "dynamodb ThrottlingException"
    DYNAMODB_INTERNAL_SERVER_ERROR = "dynamodb InternalServerError"
    SQS_THROTTLING = "sqs RequestThrottled"
    SQS_SERVER_ERROR = "sqs 500 InternalError"
    S3_SLOW_DOWN = "s3 503 SlowDown"
    CONNECT_TIMEOUT = "connect timeout"
    ENDPOINT_CONNECTION_ERROR = "endpoint connection error"


_KINDS: dict[AwsErrorKind, list[ErrorKind]] = {
    AwsErrorKind.DYNAMODB_THROUGHPUT_EXCEEDED: [ErrorKind("dynamodb", "ProvisionedThroughputExceededException", 400)],
    AwsErrorKind.DYNAMODB_THROTTLING: [ErrorKind("dynamodb", "ThrottlingException", 400)],
    AwsErrorKind.DYNAMODB_INTERNAL_SERVER_ERROR: [ErrorKind("dynamodb", "InternalServerError", 500)],
    AwsErrorKind.SQS_THROTTLING: [ErrorKind("sqs", "RequestThrottled", 400)],
    AwsErrorKind.SQS_SERVER_ERROR: [ErrorKind("sqs", "InternalError", 500)],
    AwsErrorKind.S3_SLOW_DOWN: [ErrorKind("s3", "SlowDown", 503)],
    AwsErrorKind.CONNECT_TIMEOUT: [ErrorKind(service, CONNECT_TIMEOUT, 0) for service in _SERVICES],
    AwsErrorKind.ENDPOINT_CONNECTION_ERROR: [ErrorKind(service, ENDPOINT_UNREACHABLE, 0) for service in _SERVICES],
}


def injector_for(kind: AwsErrorKind, *, rate: float, seed: int) -> AwsErrorInjector:
    """An injector of this one kind, idle until the scenario sets `active`."""
    injector = AwsErrorInjector(rate, seed=seed, kinds=_KINDS[kind])
    injector.active = False
    return injector


def skipping_refused(moto_process_request: Callable[..., Any]) -> Callable[..., Any]:
    """moto's request processing, passing over a request the injector already answered (botocore calls every
    before-send handler): installed with `monkeypatch.setattr(BotocoreStubber, "process_request", ...)`."""

    def process_request(self: BotocoreStubber, request: Any) -> Any:
        return None if getattr(request, REFUSED, False) else moto_process_request(self, request)

    return process_request
