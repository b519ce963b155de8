"""What every part of the typed client (tickwork_cli.api_client) calls through: one request and its answer, retried
when the API refused for now (429) or failed (5xx) where sending again is safe; an answer read into its model; a
listing as an iterator over its pages."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

from pydantic import BaseModel, ValidationError
from tickwork.jobtypes.http import retry_after_seconds
from tickwork.model.backoff import backoff_ceiling
from tickwork.model.policies import RetryPolicy

from tickwork_cli import client as http

Model = TypeVar("Model", bound=BaseModel)
Item = TypeVar("Item", bound=BaseModel)
Page = TypeVar("Page", bound=BaseModel)
Body = BaseModel | Mapping[str, Any]

# Retried, as a service's own calls should be: the API refused for now (429), or failed (5xx) where sending the
# request again is safe (a read, a PUT or DELETE, or a create with its Idempotency-Key).
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
REPEATABLE_METHODS = frozenset({"GET", "PUT", "DELETE"})
DEFAULT_RETRY = RetryPolicy(max_attempts=4, backoff_seconds=0.5, max_backoff_seconds=20)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Exchange:
    """Requests to one API through the CLI's HTTP client (its signing, API key and bearer token). `sleep` and `now`
    are injected: tests play the time a retry waits."""

    sender: http.Client
    retry: RetryPolicy = DEFAULT_RETRY
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    now: Callable[[], datetime] = field(default=_now, repr=False)

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Body | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The answer's JSON (None for an empty one); ApiError for a refusal, once the retries are spent."""
        params = {name: _query_value(value) for name, value in (query or {}).items() if value is not None}
        target = path + (("?" + urlencode(params)) if params else "")
        sent = {"Accept": "application/json", "User-Agent": http.USER_AGENT, **(headers or {})}
        data = None if body is None else json.dumps(_jsonable(body), separators=(",", ":")).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        repeatable = method in REPEATABLE_METHODS or "Idempotency-Key" in sent
        attempt = 1
        while True:
            response = self.sender.send(method, target, sent, data)
            if 200 <= response.status < 300:
                text = response.body.decode("utf-8", errors="replace")
                return json.loads(text) if text else None
            retried = response.status == 429 or (response.status in RETRIED_STATUSES and repeatable)
            if not retried or attempt >= self.retry.max_attempts:
                raise http.problem_error(response)
            self.sleep(self._wait(attempt, response))
            attempt += 1

    def one(
        self,
        model: type[Model],
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Body | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Model:
        answer = self.call(method, path, query, body, headers)
        try:
            return model.model_validate(answer)
        except ValidationError as exc:
            raise UnexpectedAnswer(method, path, model, exc) from None

    def _wait(self, attempt: int, response: http.HttpResponse) -> float:
        """Full jitter under the attempt's ceiling, and not before a Retry-After the API gave (up to the cap)."""
        jittered = random.random() * backoff_ceiling(self.retry, attempt)  # noqa: S311 - jitter, not a secret
        header = next((v for k, v in response.headers.items() if k.lower() == "retry-after"), None)
        asked = retry_after_seconds(header, self.now())
        return jittered if asked is None else max(jittered, min(asked, self.retry.max_backoff_seconds))


class UnexpectedAnswer(http.ApiError):
    """A success whose body is not the model this client expects for it: a stack older or newer than the client.
    (A field the client does not know is left out of the model; a field it needs and did not get is this.)"""

    def __init__(self, method: str, path: str, model: type[BaseModel], exc: ValidationError) -> None:
        fields = sorted({".".join(str(part) for part in error["loc"]) or "(body)" for error in exc.errors()})
        detail = (
            f"{method} {path} answered what is not a {model.__name__} as this client knows it (fields: "
            f"{', '.join(fields)}): is the client older or newer than the stack?"
        )
        super().__init__(200, {"title": "Unexpected answer", "detail": detail})


class RepeatedCursor(http.ApiError):
    """A page answered with a cursor that an earlier page of the same walk had: following it would never end."""

    def __init__(self, path: str, cursor: str) -> None:
        detail = f"{path} answered the cursor {cursor!r} a second time: stopped rather than follow it again"
        super().__init__(200, {"title": "Repeated cursor", "detail": detail})


def unseen(cursor: str | None, seen: set[str], path: str) -> str | None:
    """`cursor`, the next page's, remembered in `seen` (the cursors of the walk so far); RepeatedCursor if it is
    one of them."""
    if cursor in seen:
        raise RepeatedCursor(path, cursor)
    if cursor:
        seen.add(cursor)
    return cursor


class Listing(Generic[Page, Item]):
    """A paginated listing: iterating it yields every item, a page fetched when the last one is used up, to the page
    without `next_cursor`; `page(cursor)` is one page, in the listing's own model (`items` and `next_cursor`)."""

    def __init__(
        self, exchange: Exchange, page_model: type[Page], path: str, query: Mapping[str, Any], page_size: int | None
    ) -> None:
        self._exchange = exchange
        self._page_model = page_model
        self._path = path
        self._query = dict(query)
        self._page_size = page_size

    def page(self, cursor: str | None = None) -> Page:
        query = {**self._query, "limit": self._page_size, "cursor": cursor}
        return self._exchange.one(self._page_model, "GET", self._path, query=query)

    def __iter__(self) -> Iterator[Item]:
        return self.items()

    def items(self, cursor: str | None = None) -> Iterator[Item]:
        """Every item from the page at `cursor` (the first page: None) on; RepeatedCursor if a page answers a
        cursor the walk was given before."""
        seen: set[str] = set()
        unseen(cursor, seen, self._path)
        while True:
            page = self.page(cursor)
            yield from getattr(page, "items")  # noqa: B009 - every listing's model has items and next_cursor
            cursor = unseen(getattr(page, "next_cursor"), seen, self._path)  # noqa: B009
            if not cursor:
                return


class Part:
    """A noun's share of the client (jobs, runs, ...): its methods call through the one exchange."""

    _exchange: Exchange


def segment(identifier: str) -> str:
    """An id as one path segment (a tenant's name from an IAM identity holds `/` and `:`)."""
    return quote(identifier, safe="")


def _query_value(value: Any) -> str:
    """A query parameter as the API reads it: an instant in ISO 8601, an enum by its value, a bool in lower case."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _jsonable(body: Body) -> Any:
    """A model as the API reads it: the fields that were set, by their wire names; a mapping as given."""
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(body)
