"""`http`: calls a URL with `Idempotency-Key: <run id>`; non-2xx fails. A 5xx or a 429 is retried, not before its
Retry-After when it has one (a 429 or 503: capped by the job's `retry.max_backoff_seconds`); any other 4xx
fails at once, without retries.

Server-side request forgery guard: link-local and cloud metadata addresses are refused always; private,
loopback and other non-public addresses unless the template parameter HttpAllowlist (HTTP_ALLOWLIST) names a
network that holds them. The check runs on every address the host resolves to at call time, and the connection
goes to the checked address (no second lookup an attacker could rebind).

Credentials by reference (tickwork.model.secret_references): a header's value and a `query` parameter's value may
be `{"$secret": ...}` or `{"$parameter": ...}`, resolved by the executor just before the call; the URL itself,
the method and the timeout may not (they are shown in errors). A reference anywhere in `body` is resolved too.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from tickwork.jobtypes.registry import PermanentJobError, RetryNotBefore, RunContext, job_type
from tickwork.model.policies import NotCoerced
from tickwork.model.secret_references import SecretOrStr, revealed
from tickwork.model.targets import TargetRules

MAX_RESPONSE_BYTES = 256 * 1024
_ALWAYS_BLOCKED = [
    ipaddress.ip_network("169.254.0.0/16"),  # link-local, incl. EC2/ECS metadata 169.254.169.254, 169.254.170.2
    ipaddress.ip_network("fe80::/10"),
    ipaddress.ip_network("fd00:ec2::/32"),  # EC2 IPv6 metadata
    ipaddress.ip_network("100.100.100.200/32"),  # Alibaba metadata
]
_BLOCKED_HOSTS = {"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"}


class UrlRefused(PermanentJobError):
    pass


class HttpStatusError(RuntimeError):
    """A 5xx, or a 429: retried."""


class HttpClientError(PermanentJobError):
    """A 4xx other than 429: the request itself is wrong, and sending it again cannot help."""


class HttpRetryAfter(RetryNotBefore):
    """A 429 or 503 with Retry-After: retried, not before the server asked (capped by the job's retry policy)."""


# Retry-After means "not before then" only on these (RFC 9110 10.2.3; 429 in RFC 6585).
_RETRY_AFTER_STATUSES = (429, 503)


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """Retry-After as seconds from `now`: delay-seconds, or an HTTP-date (RFC 9110 10.2.3). None when absent or
    unreadable (then the ordinary backoff applies); a date in the past is no wait."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def refusal(address: str, allowlist: tuple[str, ...]) -> str | None:
    """Why this address may not be called, or None when it may."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if any(ip in net for net in _ALWAYS_BLOCKED):
        return f"{ip} is link-local or a cloud metadata address"
    if ip.is_global:
        return None
    if any(ip in ipaddress.ip_network(net, strict=False) for net in allowlist):
        return None
    allow = f"HttpAllowlist={ip}/{ip.max_prefixlen}"
    return (
        f"{ip} is private or loopback and not in the template parameter HttpAllowlist: to allow it, deploy with "
        f"--parameter-overrides {allow}, or locally run tickwork dev --parameter {allow}"
    )


class HttpPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The scheme and a host, as a pattern; which hosts may be called depends on where the host points (see above).
    url: str = Field(
        min_length=8, max_length=2048, json_schema_extra={"format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"}
    )
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "POST"
    # A header's value, or a query parameter's (added to the URL's own), may be a secret by reference.
    headers: dict[str, SecretOrStr] = Field(default_factory=dict)
    query: dict[str, SecretOrStr] = Field(default_factory=dict)
    body: Any = None
    timeout: Annotated[float, Field(gt=0, le=840), NotCoerced] = 10

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _checked_url(cls, value: str, info: ValidationInfo) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("url must be an absolute http:// or https:// URL")
        host = parts.hostname.lower().rstrip(".")
        if host in _BLOCKED_HOSTS:
            raise ValueError(f"url host {host!r} is a cloud metadata endpoint")
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return value  # a name: checked after resolution, when the run executes
        reason = refusal(host, TargetRules.of(info.context).http_allowlist)
        if reason:
            raise ValueError(f"url refused: {reason}")
        return value


def _resolve(host: str, port: int, allowlist: tuple[str, ...]) -> str:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        reason = refusal(address, allowlist)
        if reason:
            raise UrlRefused(f"url refused: {host} resolves to {reason}")
    return addresses[0]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a checked address, verifying the certificate for the original host name."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


@job_type("http", HttpPayload)
def call_url(payload: HttpPayload, ctx: RunContext) -> dict[str, Any]:
    """Calls `url` with `Idempotency-Key: <run id>`; the result holds status, headers and body."""
    parts = urlsplit(payload.url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = _resolve(host, port, ctx.http_allowlist)
    timeout = max(0.1, min(payload.timeout, ctx.remaining_seconds()))
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = _PinnedHTTPSConnection(host, address, port, timeout)
    else:
        conn = http.client.HTTPConnection(address, port, timeout=timeout)
    given = {name: revealed(value) for name, value in payload.headers.items()}
    headers = {"User-Agent": "tickwork/1", **given, "Idempotency-Key": ctx.run_id}
    headers.setdefault("Host", parts.netloc)
    body: bytes | None = None
    if payload.body is not None:
        if isinstance(payload.body, str):
            body = payload.body.encode()
        else:
            body = json.dumps(payload.body).encode()
            headers.setdefault("Content-Type", "application/json")
    path = parts.path or "/"
    query = "&".join(q for q in (parts.query, urlencode({k: revealed(v) for k, v in payload.query.items()})) if q)
    if query:
        path += "?" + query
    try:
        conn.request(payload.method, path, body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read(MAX_RESPONSE_BYTES + 1)
    finally:
        conn.close()
    text = raw[:MAX_RESPONSE_BYTES].decode("utf-8", errors="replace")
    content: Any = text
    if "json" in (response.getheader("Content-Type") or ""):
        try:
            content = json.loads(text)
        except ValueError:
            content = text
    result = {
        "status": response.status,
        "headers": dict(response.getheaders()),
        "body": content,
        "truncated": len(raw) > MAX_RESPONSE_BYTES,
    }
    if 200 <= response.status < 300:
        return result
    message = f"{payload.method} {parts.scheme}://{parts.netloc}{parts.path} returned {response.status}"
    if response.status in _RETRY_AFTER_STATUSES:
        wait = retry_after_seconds(response.getheader("Retry-After"), ctx.clock.now())
        if wait is not None:
            raise HttpRetryAfter(f"{message}; Retry-After {wait:.0f}s", wait_seconds=wait)
    if 400 <= response.status < 500 and response.status != 429:
        raise HttpClientError(message)
    raise HttpStatusError(message)
