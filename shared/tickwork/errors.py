"""Domain errors the API turns into problem details (RFC 9457)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError


@dataclass(frozen=True)
class FieldError:
    field: str
    message: str


class TickworkError(Exception):
    status = 500
    title = "Internal error"


class InvalidInput(TickworkError):
    """Bad input, naming each offending field. Nothing was written."""

    status = 422
    title = "Invalid input"

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors))

    @classmethod
    def one(cls, field: str, message: str) -> InvalidInput:
        return cls([FieldError(field, message)])

    @classmethod
    def from_validation(cls, exc: ValidationError, prefix: str = "") -> InvalidInput:
        errors = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err["loc"])
            field = ".".join(p for p in (prefix, path) if p) or prefix or "body"
            message = err["msg"].removeprefix("Value error, ")
            errors.append(FieldError(field, message))
        return cls(errors)


class PayloadTooLarge(TickworkError):
    status = 413
    title = "Payload too large"

    def __init__(self, size: int, limit: int) -> None:
        self.errors = [FieldError("payload", f"{size} bytes exceeds the limit of {limit} bytes")]
        super().__init__(self.errors[0].message)


class ItemTooLarge(TickworkError):
    """The job as it would be stored does not fit the item budget; `field` is its largest variable part."""

    status = 413
    title = "Payload too large"

    def __init__(self, field: str, size: int, limit: int, detail: str) -> None:
        self.errors = [FieldError(field, f"the job would be {size} bytes stored, over the limit of {limit}: {detail}")]
        super().__init__(self.errors[0].message)


class UnreadableItem(TickworkError):
    """A stored item this code cannot read (written by an older bug, or by hand). Never the caller's fault;
    listings skip such items, so only a read of this very item answers with this."""

    status = 500

    def __init__(self, kind: str, key: str, reason: str) -> None:
        self.title = f"Stored {kind} unreadable"
        self.key = key
        self.reason = reason
        super().__init__(f"{kind} {key} is stored in a form this version cannot read; an operator must repair it")


class Unauthenticated(TickworkError):
    status = 401
    title = "Unauthenticated"


class Forbidden(TickworkError):
    status = 403
    title = "Forbidden"


class NotFound(TickworkError):
    status = 404
    title = "Not found"


class Conflict(TickworkError):
    status = 409
    title = "Conflict"
