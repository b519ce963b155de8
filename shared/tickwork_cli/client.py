"""The HTTP exchange under the typed client (tickwork_cli.api_client) and the console's proxy: one request as it is,
SigV4-signed for a deployed API, and a refusal's problem details as an error.

Requests to anything but a loopback host are signed with SigV4 (service `execute-api`) using the normal AWS
credential chain (environment, AWS_PROFILE / --profile, SSO, instance role, ...). Local APIs (localhost,
127.0.0.1, ::1) are not signed; a local API with keys takes `--api-key` (sent as X-Api-Key). With `--token` (a
bearer JWT from your IdP, for the stack's token API, TokenApiUrl) nothing is signed: the token is sent as
`Authorization: Bearer`.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.session import Session
from tickwork import __version__

from tickwork_cli.versions import warn_if_older

USER_AGENT = f"tickwork-cli/{__version__}"
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}
_EXECUTE_API = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes


DEFAULT_TIMEOUT_SECONDS = 30.0


class Transport(Protocol):
    """(method, url, headers, body) -> response. Tests swap in one that calls the handler directly."""

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = ...
    ) -> HttpResponse: ...


def urllib_transport(
    method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> HttpResponse:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)  # noqa: S310 - http(s) only
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return HttpResponse(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as exc:
        return HttpResponse(exc.code, dict(exc.headers.items()), exc.read())


transport: Transport = urllib_transport


class ApiError(Exception):
    """A non-2xx answer, with its problem details when the API sent them (RFC 9457)."""

    def __init__(self, status: int, problem: dict[str, Any] | None, raw: str = "") -> None:
        self.status = status
        self.problem = problem or {}
        self.raw = raw
        super().__init__(self.describe())

    @property
    def title(self) -> str:
        return str(self.problem.get("title", ""))

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", ""))

    @property
    def errors(self) -> list[dict[str, str]]:
        """Each refused field: {"field": "schedule.cron", "message": ...}."""
        return list(self.problem.get("errors") or [])

    @property
    def fields(self) -> list[str]:
        return [str(error.get("field", "")) for error in self.errors]

    def describe(self) -> str:
        p = self.problem
        if not p:
            return f"HTTP {self.status}: {self.raw.strip()[:500] or 'no details'}"
        lines = [f"Error {p.get('status', self.status)} {p.get('title', '')}".rstrip()]
        errors = p.get("errors") or []
        if errors:
            width = max(len(str(e.get("field", ""))) for e in errors)
            lines += [f"  {str(e.get('field', '')).ljust(width)}  {e.get('message', '')}" for e in errors]
        elif p.get("detail"):
            lines.append(f"  {p['detail']}")
        if p.get("reason"):  # a refused retry's code (tickwork.model.retryable)
            lines.append(f"  reason: {p['reason']}")
        return "\n".join(lines)


def problem_error(response: HttpResponse) -> ApiError:
    """A non-2xx answer as the error to raise: its problem body when it has one."""
    text = response.body.decode("utf-8", errors="replace")
    problem = None
    try:
        parsed = json.loads(text)
        problem = parsed if isinstance(parsed, dict) else None
    except ValueError:
        pass
    if problem is not None and "status" not in problem and "message" in problem:
        problem = {"status": response.status, "title": str(problem["message"])}  # API Gateway's own errors
    return ApiError(response.status, problem, text)


class ConfigError(Exception):
    """The CLI cannot make the request (no URL, no credentials, ...)."""


def is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.endswith(".localhost")


def region_of(url: str, fallback: str | None) -> str | None:
    match = _EXECUTE_API.match((urlsplit(url).hostname or "").lower())
    return match.group(1) if match else fallback


@dataclass
class Client:
    base_url: str
    api_key: str | None = None
    token: str | None = None  # a bearer JWT, for the token API (docs/security.md, "Sign-in with tokens (JWT)")
    profile: str | None = None
    region: str | None = None
    # Sign every request, a loopback API's too: the console's proxy signs whatever it forwards (its tests
    # stand a local server in for API Gateway).
    always_sign: bool = False
    # Signing keys of the caller's choosing (botocore Credentials); None: the default chain (of `profile`).
    credentials: Any = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    _signer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.base_url:
            raise ConfigError("no API URL: pass --api-url or set TICKWORK_API_URL")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--api-url must be an http(s) URL, not {self.base_url!r}")
        self.base_url = self.base_url.rstrip("/")
        # Accept both https://host/ and https://host/v1 as the base.
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[: -len("/v1")]

    # ------------------------------------------------------------ signing

    def _sign(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> dict[str, str]:
        if self._signer is None:
            session = Session(profile=self.profile)
            credentials = self.credentials or session.get_credentials()
            if credentials is None:
                raise ConfigError(
                    "no AWS credentials found to sign the request (SigV4): configure them (aws configure, "
                    "AWS_PROFILE, SSO) or point --api-url at a local API"
                )
            region = region_of(self.base_url, self.region or session.get_config_variable("region"))
            if not region:
                raise ConfigError("cannot tell the API's region from its URL: pass --region or set AWS_REGION")
            self._signer = SigV4Auth(credentials, "execute-api", region)
        request = AWSRequest(method=method, url=url, data=body or b"", headers=headers)
        self._signer.add_auth(request)
        return dict(request.headers.items())

    # ------------------------------------------------------------ requests

    def send(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> HttpResponse:
        """One exchange with the API as it is, whatever the status: `target` is the path and query. Adds the API
        key and the SigV4 signature (unless the API is local). The console's proxy forwards through it."""
        url = self.base_url + target
        sent = dict(headers)
        if self.api_key:
            sent["X-Api-Key"] = self.api_key
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        elif self.always_sign or not is_local(url):
            sent = self._sign(method, url, sent, body)
        try:
            response = transport(method, url, sent, body, timeout=self.timeout)
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigError(f"cannot reach {self.base_url}: {reason}") from None
        warn_if_older(response.headers)
        return response
