"""AWS that misbehaves on purpose: throttles, 5xx and connection timeouts injected into botocore requests.

The local runtime (`tickwork dev --inject-aws-errors RATE`), the soak and tests/faults use it to show that
what AWS does under load (throttling, brief 5xx, a connection that never opens) neither loses nor doubles a
run. Each request fails with probability `rate`, by a seeded random stream, with a kind that its service
really returns; the SDK's own retries (tickwork.aws.clients.CLIENT_CONFIG) then do what they do against AWS.

It hooks `before-send`, the last event before a request leaves botocore, registered first. Against an
endpoint (the local runtime's moto server, or AWS) an answered request is never sent. In-process moto is
another `before-send` handler, and botocore calls them all: a request answered with an error is marked
(`REFUSED`), and tests/faults/aws_errors.py makes moto pass over marked requests, so a refused write is
never carried out. Nothing here is imported by a function.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError


@dataclass(frozen=True)
class ErrorKind:
    """One way a request fails: an HTTP answer (`status`, error `code`) or, with status 0, no answer at all."""

    service: str  # botocore's hyphenated service id: dynamodb, sqs, s3
    code: str
    status: int

    @property
    def name(self) -> str:
        return f"{self.service}:{self.code}"


CONNECT_TIMEOUT = "ConnectTimeout"
ENDPOINT_UNREACHABLE = "EndpointConnectionError"
NO_ANSWER = {CONNECT_TIMEOUT: ConnectTimeoutError, ENDPOINT_UNREACHABLE: EndpointConnectionError}
# Set on a request the injector answered with an error, so an in-process stub can pass over it.
REFUSED = "_tickwork_fault_refused"

# What DynamoDB, SQS and S3 answer when they are busy or broken (each retryable by the SDK's standard mode).
KINDS: tuple[ErrorKind, ...] = (
    ErrorKind("dynamodb", "ProvisionedThroughputExceededException", 400),
    ErrorKind("dynamodb", "ThrottlingException", 400),
    ErrorKind("dynamodb", "InternalServerError", 500),
    ErrorKind("sqs", "ThrottlingException", 400),
    ErrorKind("sqs", "InternalError", 500),
    ErrorKind("sqs", "ServiceUnavailable", 503),
    ErrorKind("s3", "SlowDown", 503),
    ErrorKind("dynamodb", CONNECT_TIMEOUT, 0),
    ErrorKind("sqs", CONNECT_TIMEOUT, 0),
    ErrorKind("s3", CONNECT_TIMEOUT, 0),
    ErrorKind("dynamodb", ENDPOINT_UNREACHABLE, 0),
    ErrorKind("sqs", ENDPOINT_UNREACHABLE, 0),
    ErrorKind("s3", ENDPOINT_UNREACHABLE, 0),
)

# The JSON protocols' error type prefixes (DynamoDB and SQS speak JSON; S3 speaks XML).
_JSON_TYPE = {"dynamodb": "com.amazonaws.dynamodb.v20120810#", "sqs": "com.amazonaws.sqs#"}


class _Body:
    """The raw stream botocore reads an injected answer from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def _answer(kind: ErrorKind, url: str) -> AWSResponse:
    message = f"injected by tickwork_local.aws.faults ({kind.code})"
    if kind.service == "s3":
        body = f"<Error><Code>{kind.code}</Code><Message>{message}</Message></Error>".encode()
        headers = {"Content-Type": "application/xml"}
    else:
        body = json.dumps({"__type": _JSON_TYPE[kind.service] + kind.code, "message": message}).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        if kind.service == "sqs":
            headers["x-amzn-query-error"] = f"{kind.code};Receiver"
    answer_headers = HTTPHeaders()
    for name, value in headers.items():
        answer_headers[name] = value
    return AWSResponse(url, kind.status, answer_headers, _Body(body))


class AwsErrorInjector:
    """Fails a seeded share of the requests to the services it has kinds for, while `active`; counts what it
    injected, by kind and by operation."""

    def __init__(self, rate: float, *, seed: int = 0, kinds: Sequence[ErrorKind] = KINDS) -> None:
        if not 0 <= rate <= 1:
            raise ValueError("rate must be between 0 and 1")
        self.rate = rate
        self.active = True
        self._random = random.Random(seed)  # noqa: S311 (a reproducible fault stream, not a secret)
        self._kinds: dict[str, list[ErrorKind]] = {}
        for kind in kinds:
            self._kinds.setdefault(kind.service, []).append(kind)
        self._lock = threading.Lock()
        self.injected: Counter[str] = Counter()  # ErrorKind.name -> requests failed that way
        self.by_operation: Counter[str] = Counter()  # operation name -> requests failed
        self.requests: Counter[str] = Counter()  # service -> requests seen

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def register(self, events: Any) -> None:
        """Hook into a botocore session's (or client's) event system, ahead of any other handler."""
        events.register_first("before-send", self._before_send)

    def _before_send(self, request: Any, event_name: str = "", **_: Any) -> AWSResponse | None:
        service, operation = [*event_name.split(".", 2), "", ""][1:3]
        setattr(request, REFUSED, False)  # botocore sends the same request object again on a retry
        kinds = self._kinds.get(service)
        with self._lock:
            self.requests[service] += 1
            if not (self.active and kinds) or self._random.random() >= self.rate:
                return None
            kind = self._random.choice(kinds)
            self.injected[kind.name] += 1
            self.by_operation[operation] += 1
        if kind.code in NO_ANSWER:  # never connected: raising ends the event, so nothing sees the request
            raise NO_ANSWER[kind.code](endpoint_url=request.url)
        setattr(request, REFUSED, True)
        return _answer(kind, request.url)


# A write to an item that another region is writing, in an MRSC global table: refused, unapplied (docs/regions.md).
# The status is botocore's (its legacy retry configuration names this code with 409).
REPLICATED_WRITE_CONFLICT = ErrorKind("dynamodb", "ReplicatedWriteConflictException", 409)


@dataclass
class AimedRefusal:
    """Refuse the next `times` requests of `operation` whose JSON body `matches`; `refused_at` and `passed_at`: when
    (by the injector's clock) each was refused, and when the first one after them went through."""

    operation: str
    matches: Callable[[dict[str, Any]], bool]
    times: int
    refused_at: list[Any] = field(default_factory=list)
    passed_at: Any = None


class AimedRefusals:
    """Refuses chosen requests with one kind of error, a number of times each: another region's write to the same
    item, aimed at the claim, the lease or the outcome (tests/faults/test_replicated_write_conflicts.py). Registered
    like AwsErrorInjector, and its refusals are marked the same way (`REFUSED`). `clock` stamps what it sees."""

    def __init__(self, clock: Callable[[], Any], kind: ErrorKind = REPLICATED_WRITE_CONFLICT) -> None:
        self.kind = kind
        self.clock = clock
        self.aims: list[AimedRefusal] = []
        self._lock = threading.Lock()

    def aim(self, operation: str, matches: Callable[[dict[str, Any]], bool], times: int) -> AimedRefusal:
        aimed = AimedRefusal(operation, matches, times)
        with self._lock:
            self.aims.append(aimed)
        return aimed

    def register(self, events: Any) -> None:
        events.register_first("before-send", self._before_send)

    def _before_send(self, request: Any, event_name: str = "", **_: Any) -> AWSResponse | None:
        service, operation = [*event_name.split(".", 2), "", ""][1:3]
        setattr(request, REFUSED, False)
        if service != self.kind.service:
            return None
        body = json.loads(request.body or b"{}")
        with self._lock:
            for aimed in (a for a in self.aims if a.operation == operation and a.matches(body)):
                if len(aimed.refused_at) < aimed.times:
                    aimed.refused_at.append(self.clock())
                    setattr(request, REFUSED, True)
                    return _answer(self.kind, request.url)
                if aimed.passed_at is None:
                    aimed.passed_at = self.clock()
        return None
