"""A run's secrets by reference (tickwork.model.secret_references), resolved just before its handler runs.

The references in the payload are replaced by their values in the copy the handler is given; the stored payload
keeps the references. Each reference is checked against the run's tenant's allowance before it is fetched. The
values are hidden (tickwork.observability.secret_mask) from the moment they are fetched until the run's outcome is
recorded, so no log line, result, checkpoint, progress report, run log or error written meanwhile holds one.

Values are kept per execution environment for the stack's SecretCacheSeconds (CACHE_FOR by default; by the injected
clock), then fetched again: a rotated secret is picked up within that. A reference the run may not use, or whose value cannot be read for good (missing,
access denied, not JSON, no such key), fails the run without retries, naming the reference and never a value; a
transient error (a throttle, a 5xx) is retried as any other.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from tickwork.aws.secrets import SecretNotReadable, SecretStores
from tickwork.jobtypes.registry import JobType, PermanentJobError
from tickwork.model.clock import Clock
from tickwork.model.errors import field_path
from tickwork.model.secret_references import (
    Location,
    SecretAllowance,
    SecretKind,
    SecretReference,
    references_in,
    with_values,
)
from tickwork.observability import secret_mask

CACHE_FOR = timedelta(minutes=5)
MAX_CACHED = 512  # values kept per execution environment; past it, the oldest is dropped


class SecretUnavailable(PermanentJobError):
    """A reference this run may not use, or whose value cannot be read: the run fails without retries."""


class SecretCache:
    """Secret values fetched in this execution environment, each kept `keep_for` after its fetch. Thread-safe (a
    batch's runs are on threads); two runs that miss at once may both fetch."""

    def __init__(self, stores: SecretStores, clock: Clock, *, keep_for: timedelta = CACHE_FOR) -> None:
        self.stores, self.clock, self.keep_for = stores, clock, keep_for
        self._kept: dict[tuple[SecretKind, str], tuple[datetime, str]] = {}
        self._lock = threading.Lock()

    def raw(self, reference: SecretReference) -> str:
        """The whole value the reference points into (a secret's SecretString, a parameter's value)."""
        key = (reference.kind, reference.source)
        now = self.clock.now()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and now - kept[0] < self.keep_for:
            return kept[1]
        if reference.kind is SecretKind.PARAMETER:
            value = self.stores.parameter(reference.source)
        else:
            value = self.stores.secret_string(reference.source)
        with self._lock:
            self._kept[key] = (now, value)
            while len(self._kept) > MAX_CACHED:
                del self._kept[next(iter(self._kept))]
        return value


class RunSecrets:
    """One run's resolution: the values it fetched stay hidden until `release` (after its outcome is recorded)."""

    def __init__(self, cache: SecretCache | None, allowance: SecretAllowance) -> None:
        self.cache, self.allowance = cache, allowance
        self._values: list[str] = []
        self._lock = threading.Lock()

    @staticmethod
    def needed(payload: dict[str, Any]) -> bool:
        return next(references_in(payload), None) is not None

    def payload(self, job_type: JobType, stored: dict[str, Any], context: dict[str, Any]) -> BaseModel:
        """The handler's payload: the stored one with its references' values, as the type's model reads it."""
        return self._parsed(job_type, with_values(stored, self._value), context)

    def resolved(self, job_type: JobType, stored: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        """The stored payload with its references' values, as JSON (for a handler that runs in the job sandbox,
        which parses it again), checked by the type's model as `payload` checks it."""
        values = with_values(stored, self._value)
        self._parsed(job_type, values, context)
        return values

    def hidden(self) -> list[str]:
        """The values this run fetched so far (and hides)."""
        with self._lock:
            return list(self._values)

    @staticmethod
    def _parsed(job_type: JobType, resolved: dict[str, Any], context: dict[str, Any]) -> BaseModel:
        try:
            return job_type.parse(resolved, context=context)
        except ValidationError as exc:
            # Neither the input nor the model's message: either may spell a value.
            fields = ", ".join(sorted({field_path(err["loc"]) or "payload" for err in exc.errors()}))
            raise SecretUnavailable(
                f"the payload with its secrets resolved is refused by the {job_type.name} type's model at {fields}"
            ) from None

    def keep_hidden(self) -> None:
        """The values stay hidden for as long as this process lives (a handler that outlived its run goes on)."""
        with self._lock:
            self._values = []

    def release(self) -> None:
        with self._lock:
            values, self._values = self._values, []
        secret_mask.unhide(values)

    def _value(self, at: Location, reference: SecretReference) -> str:
        where = field_path(["payload", *at])
        refusal = reference.refusal(self.allowance)
        if refusal is not None:
            raise SecretUnavailable(f"{where}: {refusal}")
        if self.cache is None:
            raise SecretUnavailable(f"{where}: {reference.text}: this executor has no secret stores wired")
        try:
            raw = self.cache.raw(reference)
        except SecretNotReadable as exc:
            raise SecretUnavailable(f"{where}: {reference.text} cannot be read: {exc}") from None
        self._keep(raw)
        value = raw if reference.json_key is None else self._key_of(raw, reference, where)
        self._keep(value)
        return value

    def _keep(self, value: str) -> None:
        with self._lock:
            self._values.append(value)
        secret_mask.hide([value])

    @staticmethod
    def _key_of(raw: str, reference: SecretReference, where: str) -> str:
        try:
            document = json.loads(raw)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise SecretUnavailable(f"{where}: {reference.text}: the secret's value is not a JSON object")
        value = document.get(reference.json_key)
        if not isinstance(value, str):
            raise SecretUnavailable(f"{where}: {reference.text}: the secret's JSON has no string at that key")
        return value
