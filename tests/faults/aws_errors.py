"""AWS errors injected into every client a session builds, through botocore's `before-send` event, at a seeded rate.

What runs first: moto (`mock_aws`, in-process) answers requests from a `before-send` handler too, one of
botocore's built-in handlers, which every client gets in the middle of its handler list. Ours is registered on
the session with `register_first`, so it runs before moto's. But botocore calls every `before-send` handler
(`emit`, not `emit_until_response`) and uses the first answer: moto would still carry out a request we answer
with an error. For a connection error we raise, which ends the emit before moto sees the request. For an
error answer we mark the request, and `skipping_refused` makes moto pass over marked requests: an
injected throttle, 5xx or SlowDown is refused, as AWS refuses it, never carried out and then misreported.
The SDK's retries see exactly what they would see from AWS: each attempt passes through the hook again.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError
from moto.core.botocore_stubber import BotocoreStubber

_REFUSED = "_tickwork_fault_refused"  # set on a request our hook answered; moto passes over it


class AwsErrorKind(StrEnum):
    DYNAMODB_THROUGHPUT_EXCEEDED = "dynamodb ProvisionedThroughputExceededException"
    DYNAMODB_THROTTLING = "dynamodb ThrottlingException"
    DYNAMODB_INTERNAL_SERVER_ERROR = "dynamodb InternalServerError"
    SQS_THROTTLING = "sqs RequestThrottled"
    SQS_SERVER_ERROR = "sqs 500 InternalError"
    S3_SLOW_DOWN = "s3 503 SlowDown"
    CONNECT_TIMEOUT = "connect timeout"
    ENDPOINT_CONNECTION_ERROR = "endpoint connection error"


@dataclass(frozen=True)
class _Answer:
    service: str | None  # None: any service
    status: int
    code: str


_ANSWERS: dict[AwsErrorKind, _Answer] = {
    AwsErrorKind.DYNAMODB_THROUGHPUT_EXCEEDED: _Answer("dynamodb", 400, "ProvisionedThroughputExceededException"),
    AwsErrorKind.DYNAMODB_THROTTLING: _Answer("dynamodb", 400, "ThrottlingException"),
    AwsErrorKind.DYNAMODB_INTERNAL_SERVER_ERROR: _Answer("dynamodb", 500, "InternalServerError"),
    AwsErrorKind.SQS_THROTTLING: _Answer("sqs", 400, "RequestThrottled"),
    AwsErrorKind.SQS_SERVER_ERROR: _Answer("sqs", 500, "InternalError"),
    AwsErrorKind.S3_SLOW_DOWN: _Answer("s3", 503, "SlowDown"),
    AwsErrorKind.CONNECT_TIMEOUT: _Answer(None, 0, "ConnectTimeoutError"),
    AwsErrorKind.ENDPOINT_CONNECTION_ERROR: _Answer(None, 0, "EndpointConnectionError"),
}


class AwsErrorInjector:
    """Answers a seeded fraction of the requests of `kind`'s service with that error, while `active`."""

    def __init__(self, kind: AwsErrorKind, *, rate: float, seed: int) -> None:
        self.kind = kind
        self.rate = rate
        self.active = False
        self.injected: Counter[str] = Counter()  # by operation
        self.passed = 0
        self._answer = _ANSWERS[kind]
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def attach_session(self, session: Any) -> None:
        """Every client the session builds from now on goes through the hook, ahead of moto."""
        session.events.register_first("before-send", self._before_send)

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def _before_send(self, request: Any, event_name: str, **_: Any) -> AWSResponse | None:
        _, service, operation = event_name.split(".", 2)
        setattr(request, _REFUSED, False)  # botocore re-sends the same request object on a retry
        answer = self._answer
        with self._lock:
            hit = self.active and answer.service in (None, service) and self._random.random() < self.rate
            if not hit:
                self.passed += 1
                return None
            self.injected[operation] += 1
        if answer.status == 0:  # never connected: raising ends the emit, so moto never sees the request
            error = ConnectTimeoutError if self.kind is AwsErrorKind.CONNECT_TIMEOUT else EndpointConnectionError
            raise error(endpoint_url=request.url)
        setattr(request, _REFUSED, True)
        return _error_response(request, answer, service)


def _error_response(request: Any, answer: _Answer, service: str) -> AWSResponse:
    headers = {"x-amzn-RequestId": "fault-injected", "x-amz-request-id": "fault-injected"}
    if service == "s3":
        body = f"<Error><Code>{answer.code}</Code><Message>injected</Message></Error>".encode()
        headers["Content-Type"] = "application/xml"
    else:
        body = json.dumps({"__type": answer.code, "message": "injected"}).encode()
        headers["Content-Type"] = "application/x-amz-json-1.0"
    return AWSResponse(request.url, answer.status, headers, _Raw(body))


class _Raw:
    """The raw body botocore reads an answer from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body


def skipping_refused(moto_process_request: Callable[..., Any]) -> Callable[..., Any]:
    """moto's request processing, passing over a request our hook already answered (botocore calls every
    before-send handler): installed with `monkeypatch.setattr(BotocoreStubber, "process_request", ...)`."""

    def process_request(self: BotocoreStubber, request: Any) -> Any:
        return None if getattr(request, _REFUSED, False) else moto_process_request(self, request)

    return process_request
