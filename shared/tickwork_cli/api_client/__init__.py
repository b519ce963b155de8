"""A typed Python client of the Tickwork API, for a service that creates and reads its jobs (docs/jobs-as-code.md,
"The Python client"), and the one client the `tickwork` command line calls the API through.

    from tickwork_cli.api_client import Client
    from tickwork.control.api_bodies import JobSpec

    tickwork = Client("https://abc123.execute-api.eu-west-1.amazonaws.com")  # SigV4, the default credential chain
    job = tickwork.create_job(JobSpec.model_validate({"name": "remind", "type": "echo", "schedule": {"at": ...}}))
    for run in tickwork.list_runs(job.id): ...

A method for every operation of the API's OpenAPI document (OPERATIONS names each one's), a module per noun (jobs,
runs, workflows, calendars, operators) composed here. Bodies and answers are the API's own pydantic models
(tickwork.control.api_bodies and the core models it answers with); a body may be a plain mapping too, which the
API checks. It sends through the CLI's HTTP client (tickwork_cli.client: its SigV4 signing, API key and bearer
token), and adds what a program needs (tickwork_cli.api_client.exchange): listings as iterators that follow
`next_cursor`, retries of 429 and 5xx with exponential backoff and full jitter (not before a `Retry-After`), an
Idempotency-Key on every job create, and one exception type, ApiError, carrying the API's problem body.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tickwork.model.policies import RetryPolicy

from tickwork_cli import client as http
from tickwork_cli.api_client import calendars, jobs, operators, runs, workflows
from tickwork_cli.api_client.exchange import DEFAULT_RETRY, Exchange, Listing, UnexpectedAnswer
from tickwork_cli.client import DEFAULT_TIMEOUT_SECONDS, ApiError, ConfigError

__all__ = ["OPERATIONS", "ApiError", "Client", "ConfigError", "Listing", "UnexpectedAnswer"]

# Each operation of the API, by the OpenAPI document's method and path, and the method that calls it
# (tests/cli/test_every_api_operation_in_the_client.py holds it to the document).
OPERATIONS: dict[tuple[str, str], str] = {
    **jobs.OPERATIONS,
    **runs.OPERATIONS,
    **workflows.OPERATIONS,
    **calendars.OPERATIONS,
    **operators.OPERATIONS,
}


class Client(jobs.Jobs, runs.Runs, workflows.Workflows, calendars.Calendars, operators.Operators):
    """The Tickwork API at `api_url` (the stack's ApiUrl, or a local runtime's http://127.0.0.1:3000).

    Authentication, one of: nothing (the default AWS credential chain signs with SigV4; a loopback URL is not
    signed), `credentials` (botocore Credentials to sign with instead), `token` (a bearer JWT, for the stack's
    token API) or `api_key` (X-Api-Key, for `tickwork dev --api-keys`). `retry` bounds the attempts of one call
    and its backoff (full jitter), `timeout` each attempt, in seconds. `sleep` waits between attempts (tests give
    theirs), `now` reads a Retry-After given as a date."""

    def __init__(
        self,
        api_url: str,
        *,
        credentials: Any = None,
        token: str | None = None,
        api_key: str | None = None,
        profile: str | None = None,
        region: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        if sum(given is not None for given in (credentials, token, api_key)) > 1:
            raise ConfigError("give one of credentials, token or api_key")
        sender = http.Client(
            api_url,
            api_key=api_key,
            token=token,
            profile=profile,
            region=region,
            always_sign=credentials is not None,
            credentials=credentials,
            timeout=timeout,
        )
        self._exchange = Exchange(sender, retry, sleep) if now is None else Exchange(sender, retry, sleep, now)

    @property
    def base_url(self) -> str:
        """The API's base URL, as requests are sent to it (no trailing `/` nor `/v1`)."""
        return self._exchange.sender.base_url
