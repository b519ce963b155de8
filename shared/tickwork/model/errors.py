"""Domain errors: what happened, in the domain's words. How a protocol spells them (an HTTP status, a problem
type) is the edge's business: the API maps them in functions/api/problems.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError


@dataclass(frozen=True)
class FieldError:
    field: str
    message: str


class TickworkError(Exception):
    """Something the domain refused or could not do. `errors` names the offending fields, when there are any."""

    errors: list[FieldError]

    def __init__(self, message: str = "", errors: list[FieldError] | None = None) -> None:
        if errors is not None:
            self.errors = list(errors)
        elif "errors" not in self.__dict__:  # a subclass may have named them before calling this
            self.errors = []
        super().__init__(message)


class InvalidInput(TickworkError):
    """Bad input, naming each offending field. Nothing was written."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors), errors)

    @classmethod
    def one(cls, field: str, message: str) -> InvalidInput:
        return cls([FieldError(field, message)])

    @classmethod
    def from_validation(cls, exc: ValidationError, prefix: str = "") -> InvalidInput:
        errors = []
        for err in exc.errors():
            path = field_path(err["loc"])
            field = ".".join(p for p in (prefix, path) if p) or "body"
            message = err["msg"].removeprefix("Value error, ")
            errors.append(FieldError(field, message))
        return cls(errors)


def field_path(parts: Sequence[str | int]) -> str:
    """A location as the API names fields: ("steps", 0, "type") -> steps[0].type; () -> ""."""
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + str(part)
    return path


class TooLarge(TickworkError):
    """Something sent, or what would be stored of it, is over a size limit; `errors` names the part."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, [FieldError(field, message)])


class PayloadTooLarge(TooLarge):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__("payload", f"{size} bytes exceeds the limit of {limit} bytes")


class ItemTooLarge(TooLarge):
    """The job as it would be stored does not fit the item budget; `field` is its largest variable part."""

    def __init__(self, field: str, size: int, limit: int, detail: str) -> None:
        super().__init__(field, f"the job would be {size} bytes stored, over the limit of {limit}: {detail}")


class UnreadableItem(TickworkError):
    """A stored item this code cannot read (written by an older bug, or by hand). Never the caller's fault;
    listings skip such items, so only a read of this very item answers with this."""

    def __init__(self, kind: str, key: str, reason: str) -> None:
        self.kind = kind
        self.key = key
        self.reason = reason
        super().__init__(f"{kind} {key} is stored in a form this version cannot read; an operator must repair it")


class Unauthenticated(TickworkError):
    """No caller identity (or, locally, no valid API key)."""


class Forbidden(TickworkError):
    """A caller identity that maps to no tenant."""


class IdentityUnresolved(TickworkError):
    """The caller's identity could not be mapped to its tenant for now (what names it could not be read); nothing
    was read or written. `retry_after` (seconds) when waiting may help."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class NotFound(TickworkError):
    """No such job or run for this tenant (another tenant's is not found either)."""


class Conflict(TickworkError):
    """The request contradicts the state of the job or run, or an earlier request with the same key."""


class NotRetryable(Conflict):
    """A retry of a run its own retry does not re-queue: `reason` says why, as a code
    (tickwork.model.retryable.NotRetryableReason)."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


class AdminRequired(Forbidden):
    """A route only an admin may call (tenants' settings, the SQS dead-letter queues), called by a tenant that is
    not one."""

    def __init__(self) -> None:
        super().__init__(
            "an admin is needed: tenants' settings and the SQS dead-letter queues are the tickwork-admin role's "
            "(or an admin key's)"
        )


class QuotaExceeded(TickworkError):
    """A tenant's quota refuses the request; nothing was written. `retry_after` (seconds) when waiting may help."""

    def __init__(self, quota: str, limit: int, current: int, retry_after: int | None = None) -> None:
        self.quota = quota
        self.limit = limit
        self.current = current
        self.retry_after = retry_after
        super().__init__(f"the tenant's {quota} quota is {limit} and it has {current}")


class ResultRegionUnreachable(TickworkError):
    """A run's result is held by another region's results bucket (the region whose executor recorded the run), and
    that region did not answer. Not a missing result: the run's status, attempts and error are still readable."""

    def __init__(self, run_id: str, region: str, status: str) -> None:
        self.run_id = run_id
        self.region = region
        super().__init__(
            f"run {run_id}'s result is held in region {region}, which could not be read now; the run "
            f"({status}), its attempts and its error are readable at GET /v1/runs/{run_id}"
        )
