"""A custom resource's answer PUT to the pre-signed S3 URL CloudFormation gave in the request (ResponseURL).

The URL is signed for an empty Content-Type, so the body goes with `Content-Type: ` (no type), as CloudFormation's
own cfn-response module sends it. Only an https URL of an AWS host is answered (a request is given by whoever may
invoke the provider: its answer is never sent elsewhere); the local runtime also allows a loopback http URL, where
its tests and `tickwork dev` listen.
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from tickwork.model.errors import InvalidInput

_AWS_HOSTS = (".amazonaws.com", ".amazonaws.com.cn")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ResponseUrls:
    loopback_allowed: bool = False  # the local runtime's (RESOURCE_PROVIDER_LOOPBACK_URLS)
    timeout_seconds: float = 10.0

    def check(self, url: str) -> None:
        """InvalidInput naming ResponseURL unless it is one this provider answers to."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme == "https" and host.endswith(_AWS_HOSTS):
            return
        if self.loopback_allowed and parts.scheme in ("http", "https") and host in _LOOPBACK:
            return
        raise InvalidInput.one("ResponseURL", "not a pre-signed https URL of an AWS host: no answer is sent there")

    def put(self, url: str, body: bytes) -> int:
        """PUT the body; the status answered (an HTTP error raises: the invoke fails, and Lambda's retry of it
        delivers the request again, which the provider answers again, idempotently)."""
        self.check(url)
        request = urllib.request.Request(  # noqa: S310 - checked just above: https to AWS, or loopback
            url, data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
        )
        with urllib.request.urlopen(request, timeout=self.timeout_seconds) as answer:  # noqa: S310
            return int(answer.status)
