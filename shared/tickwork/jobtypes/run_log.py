"""Run logs, the collector: the lines a handler logs with `ctx.log(...)`, collected per attempt and kept beside
the result (the API reads them back through tickwork.control.run_log_reader).

Each line goes at once to the function's structured log (Powertools, with the run id and attempt), and is
collected in memory for the attempt, up to LIMIT_LINES lines and LIMIT_BYTES bytes (each line counted as its
compact JSON). Past either cap the attempt's log is `truncated`: later lines go to the function's log only,
and one marker line, kept outside the caps, ends the collected lines with how many were left out.

After the handler ends (succeeded, failed, timed out or cancelled), an attempt that logged anything writes one
object, `logs/<tenant>/<job id>/<run id>/<requeues>-<attempt>.json`, with If-None-Match: * (see
tickwork.aws.results.ResultStore.write_logs_once). One object per attempt rather than one per run: each is then
written once, whole, without reading what an earlier attempt wrote, and no attempt can overwrite another's
(a duplicate delivery of a finished run never leases it, so never writes). An attempt that logged nothing writes
nothing: a job that does not log pays no S3 request.

Tickwork adds nothing of the payload: a line holds the handler's message and the fields it chose to pass.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tickwork.model.clock import Clock, iso
from tickwork.observability import logger, secret_mask

LIMIT_BYTES = 64 * 1024  # per attempt: the collected lines, each as compact JSON
LIMIT_LINES = 1000  # per attempt
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_LOG_METHODS = {"DEBUG": logger.debug, "INFO": logger.info, "WARNING": logger.warning, "ERROR": logger.error}


def _compact(value: Any) -> str:
    # default=str: a handler's field that JSON cannot hold (a datetime, a Decimal) is kept as its text.
    return json.dumps(value, separators=(",", ":"), default=str)


class RunLog:
    """One attempt's log: what `ctx.log` and `ctx.logger` write to. Thread-safe (a handler may log from threads)."""

    def __init__(
        self,
        run_id: str,
        attempt: int,
        clock: Clock,
        *,
        limit_bytes: int = LIMIT_BYTES,
        limit_lines: int = LIMIT_LINES,
    ) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.clock = clock
        self.limit_bytes = limit_bytes
        self.limit_lines = limit_lines
        self._lines: list[dict[str, Any]] = []
        self._bytes = 0
        self._dropped = 0
        self._lock = threading.Lock()

    def log(self, message: str, level: str = "INFO", **fields: Any) -> None:
        """Log a line: to the function's structured log now, and to the run's collected log while under the caps.
        `level` is DEBUG, INFO, WARNING or ERROR (any case); `fields` are the handler's own, kept as JSON."""
        name = level.upper() if isinstance(level, str) else level
        if name not in LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
        text = secret_mask.text(str(message))  # a run's secrets are never kept
        plain = secret_mask.value(json.loads(_compact(fields)))  # what the stored line will hold, whatever was passed
        _LOG_METHODS[name](text, extra={"run_id": self.run_id, "attempt": self.attempt, "fields": plain})
        self._collect({"at": iso(self.clock.now()), "level": name, "message": text, "fields": plain})

    def extend(self, lines: list[dict[str, Any]], dropped: int = 0) -> None:
        """Lines logged elsewhere for this attempt (a sandboxed handler's, already in its function's log: see
        tickwork.jobtypes.sandbox), collected under this log's caps and masked as this log masks; `dropped` lines
        left out there are counted as left out here."""
        for line in lines:
            self._collect(
                {**line, "message": secret_mask.text(line["message"]), "fields": secret_mask.value(line["fields"])}
            )
        if dropped:
            with self._lock:
                self._dropped += dropped

    def collected(self) -> tuple[list[dict[str, Any]], int]:
        """The lines collected so far, and how many were left out past the caps."""
        with self._lock:
            return list(self._lines), self._dropped

    def _collect(self, line: dict[str, Any]) -> None:
        size = len(_compact(line).encode())
        with self._lock:
            if self._dropped or len(self._lines) >= self.limit_lines or self._bytes + size > self.limit_bytes:
                self._dropped += 1  # the caps are reached: this line and all later ones stay out
                return
            self._lines.append(line)
            self._bytes += size

    def debug(self, message: str, **fields: Any) -> None:
        self.log(message, "DEBUG", **fields)

    def info(self, message: str, **fields: Any) -> None:
        self.log(message, "INFO", **fields)

    def warning(self, message: str, **fields: Any) -> None:
        self.log(message, "WARNING", **fields)

    def error(self, message: str, **fields: Any) -> None:
        self.log(message, "ERROR", **fields)

    @property
    def logged(self) -> int:
        """How many lines were logged so far, collected or not (a flush writes only when this has grown)."""
        with self._lock:
            return len(self._lines) + self._dropped

    @property
    def empty(self) -> bool:
        with self._lock:
            return not self._lines and not self._dropped

    def document(self, requeues: int = 0) -> dict[str, Any]:
        """The object stored for this attempt: its lines, and when truncated a final marker line."""
        with self._lock:
            lines = list(self._lines)
            dropped = self._dropped
        if dropped:
            lines.append(
                {
                    "at": iso(self.clock.now()),
                    "level": "WARNING",
                    "message": f"log truncated: {dropped} later line(s) over this attempt's cap of "
                    f"{self.limit_lines} lines or {self.limit_bytes} bytes are only in the function's log",
                    "fields": {"truncated": True, "dropped_lines": dropped},
                }
            )
        return {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "requeues": requeues,
            "truncated": bool(dropped),
            "limit_bytes": self.limit_bytes,
            "limit_lines": self.limit_lines,
            "lines": lines,
        }
