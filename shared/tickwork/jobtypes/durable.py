"""Durable runs, the handler's side: `ctx.checkpoint(state)`, `ctx.last_checkpoint()`, `ctx.step(name, fn)` and
`ctx.progress(...)`, `ctx.should_yield()` and `ctx.yield_run()` (docs/durable-runs.md).

A run's checkpoint is one JSON document, `{"state": <the handler's last state>, "steps": {<name>: <result>}}`, saved
whole by each `checkpoint` and each new `step`. Saving is the executor's (tickwork.executor.checkpoints): durable
before the call returns, and fenced by the lease. Here: the document kept in memory for the attempt, its encoding,
and its limits: a document over MAX_CHECKPOINT_BYTES, or one JSON cannot hold, raises to the handler and saves
nothing, so the previous checkpoint stands.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from tickwork.observability import secret_mask

# Kept in the run item when its JSON is at most this: the save is then one UpdateItem, and the item (400 KB at
# most, with its payload, result and attempt history) keeps room. Larger documents go to S3, up to the next limit.
INLINE_CHECKPOINT_MAX_BYTES = 8 * 1024
MAX_CHECKPOINT_BYTES = 4 * 1024 * 1024

MAX_PROGRESS_DATA_BYTES = 2 * 1024  # a progress report's `data`, as JSON: it rides in the run item's writes
MAX_PROGRESS_MESSAGE_CHARS = 500  # longer messages are cut

T = TypeVar("T")


class CheckpointTooLarge(ValueError):
    """The checkpoint's JSON (its state and its steps' results) is over MAX_CHECKPOINT_BYTES: nothing was saved."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"checkpoint is {size} bytes as JSON, over the limit of {limit} bytes; the previous one stands"
        )
        self.size = size
        self.limit = limit


class CheckpointNotJSON(TypeError):
    """The state (or a step's result) is not JSON-serialisable: nothing was saved."""


class CheckpointWriter(Protocol):
    """Where the checkpoint is kept (the executor's: tickwork.executor.checkpoints.LeasedCheckpoints)."""

    def load(self) -> dict[str, Any] | None:
        """The run's last saved document, or None."""
        ...

    def save(self, body: bytes) -> None:
        """Save the document's JSON durably before returning; raise (LeaseLost) if this attempt may not."""
        ...


class InMemoryCheckpoints:
    """A writer that keeps the document for the attempt only: a context made outside the executor (tests)."""

    def __init__(self, document: dict[str, Any] | None = None) -> None:
        self.document = document
        self.saves = 0

    def load(self) -> dict[str, Any] | None:
        return self.document

    def save(self, body: bytes) -> None:
        self.document = json.loads(body)
        self.saves += 1


def encode_checkpoint(document: dict[str, Any], *, limit: int = MAX_CHECKPOINT_BYTES) -> bytes:
    """The document's compact JSON; CheckpointNotJSON or CheckpointTooLarge (naming the size and the limit)."""
    try:
        body = json.dumps(document, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise CheckpointNotJSON(f"checkpoint state must be JSON-serialisable: {exc}") from exc
    if len(body) > limit:
        raise CheckpointTooLarge(len(body), limit)
    return body


class RunCheckpoints:
    """One attempt's view of the run's checkpoint: loaded once, then kept as saved. Thread-safe."""

    def __init__(self, writer: CheckpointWriter) -> None:
        self.writer = writer
        self._document: dict[str, Any] | None = None
        self._loaded = False
        self.saves = 0  # this attempt's (a handler that saved one may be yielded for it: tickwork.executor.yields)
        self._lock = threading.RLock()

    def _current(self) -> dict[str, Any]:
        if not self._loaded:
            self._document = self.writer.load()
            self._loaded = True
        return self._document or {}

    def last(self) -> Any:
        """The state of the last checkpoint (this attempt's, or an earlier attempt's), as JSON holds it; None if
        none was saved."""
        with self._lock:
            return self._current().get("state")

    def save(self, state: Any) -> None:
        with self._lock:
            self._write({"state": state, "steps": self._current().get("steps", {})})

    def document(self) -> dict[str, Any] | None:
        """The whole document (state and steps) as last saved, None if none was (a sandboxed handler starts from
        it: tickwork.jobtypes.sandbox)."""
        with self._lock:
            return self._current() or None

    def replace(self, document: dict[str, Any]) -> None:
        """Save a whole document made elsewhere (a sandboxed segment's last), as `save` saves: its state and its
        steps, checked against the same limits."""
        steps = document.get("steps") or {}
        if not isinstance(steps, dict):
            raise CheckpointNotJSON("a checkpoint's steps must be an object of named results")
        with self._lock:
            self._write({"state": document.get("state"), "steps": steps})

    def step(self, name: str, fn: Callable[[], T]) -> T:
        """`fn`'s result: remembered from an earlier call under `name` (this attempt's or an earlier one's), or
        `fn()` called now and its result saved under `name` before it is returned."""
        if not isinstance(name, str) or not name:
            raise ValueError("a step's name must be a non-empty string")
        with self._lock:
            steps = self._current().get("steps", {})
            if name in steps:
                return steps[name]  # type: ignore[no-any-return]
        value = fn()  # not under the lock: a step may take long, and its handler may log or checkpoint meanwhile
        with self._lock:
            current = self._current()
            self._write({"state": current.get("state"), "steps": {**current.get("steps", {}), name: value}})
            return self._document["steps"][name]  # type: ignore[index, no-any-return]

    def _write(self, document: dict[str, Any]) -> None:
        body = encode_checkpoint(secret_mask.value(document))  # a run's secrets are never saved
        self.writer.save(body)
        self.saves += 1
        self._document = json.loads(body)  # as a later attempt will read it: tuples are lists, keys strings


class ProgressSink(Protocol):
    """Where progress reports go (the executor's: tickwork.executor.progress_reports.ProgressReports)."""

    def report(self, progress: dict[str, Any]) -> None: ...


class KeptProgress:
    """A sink that keeps the last report: a context made outside the executor (tests)."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None

    def report(self, progress: dict[str, Any]) -> None:
        self.last = progress


def progress_report(fraction: float | None, message: str | None, data: Any) -> dict[str, Any]:
    """A progress report as stored, less its time: ValueError for a fraction outside [0, 1] (or not a number), or
    data JSON cannot hold or over MAX_PROGRESS_DATA_BYTES; a message is cut at MAX_PROGRESS_MESSAGE_CHARS."""
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 <= fraction <= 1:
            raise ValueError(f"progress fraction must be a number from 0 to 1, not {fraction!r}")
        fraction = float(fraction)
    try:
        size = len(json.dumps(data, separators=(",", ":"), allow_nan=False).encode())
    except (TypeError, ValueError) as exc:
        raise ValueError(f"progress data must be JSON-serialisable: {exc}") from exc
    if size > MAX_PROGRESS_DATA_BYTES:
        raise ValueError(f"progress data is {size} bytes as JSON, over the limit of {MAX_PROGRESS_DATA_BYTES} bytes")
    text = None if message is None else str(message)[:MAX_PROGRESS_MESSAGE_CHARS]
    return {"fraction": fraction, "message": text, "data": data}


class Yielded:
    """What `ctx.yield_run()` returns, for the handler to return: the run goes on in a fresh invocation."""

    def __repr__(self) -> str:
        return "Yielded()"
