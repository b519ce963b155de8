"""The one place Powertools' logger, tracer and metrics are built; handlers and the domain import them.

Service name and namespace come from TelemetryNames (POWERTOOLS_* variables set by the template), read when
this module is first imported; the log level and the switches (POWERTOOLS_LOG_LEVEL, ..._TRACE_DISABLED,
..._METRICS_DISABLED) are Powertools' own variables, which it reads itself.

Every line the logger writes passes through `secret_mask` first: the secret values resolved for the runs in
progress (tickwork.executor.secrets) are replaced by *** wherever they are in it (message, fields, exception).
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from tickwork.model.secret_references import MASK
from tickwork.settings import TelemetryNames


class SecretMask:
    """The secret values in use in this process (each run's, from its resolution to its recorded end), replaced by
    *** in whatever is written: log lines, and a run's result, checkpoint, progress, log and error. A value is
    also matched as JSON spells it inside a string. Thread-safe (a batch's runs are on threads)."""

    def __init__(self) -> None:
        self._uses: Counter[str] = Counter()
        self._hidden: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def hide(self, values: Iterable[str]) -> None:
        with self._lock:
            self._uses.update(_spellings(values))
            self._refresh()

    def unhide(self, values: Iterable[str]) -> None:
        with self._lock:
            self._uses.subtract(_spellings(values))
            self._uses = +self._uses  # drops those no run uses any more
            self._refresh()

    def clear(self) -> None:
        """Nothing hidden, as in a fresh process."""
        with self._lock:
            self._uses.clear()
            self._refresh()

    def _refresh(self) -> None:
        self._hidden = tuple(sorted(self._uses, key=len, reverse=True))  # a longer value before its parts

    @property
    def active(self) -> bool:
        return bool(self._hidden)

    def text(self, text: str) -> str:
        for value in self._hidden:
            text = text.replace(value, MASK)
        return text

    def value(self, value: Any) -> Any:
        """`value` (JSON-like: dicts, lists, strings) with every hidden value masked; itself when none is hidden."""
        if not self._hidden:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):  # a record's fields keep their types for whoever reads them after (loc paths)
            return tuple(self.value(v) for v in value)
        if isinstance(value, BaseException):  # a log line's stack trace holds the exception itself
            return self.text(str(value))
        return value


def _spellings(values: Iterable[str]) -> list[str]:
    spelled = set()
    for value in values:
        if value:
            spelled |= {value, json.dumps(value)[1:-1]}
    return list(spelled)


secret_mask = SecretMask()


# The record's own attributes: any other is a field a caller passed (`extra=`), masked too.
_RECORD_ATTRIBUTES = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class _MaskingFilter(logging.Filter):
    """Masks the record itself, before any handler sees it (Powertools' and any other: a test's capture)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if secret_mask.active:
            record.msg, record.args = secret_mask.text(record.getMessage()), None
            for name, value in vars(record).items():
                if name not in _RECORD_ATTRIBUTES:
                    setattr(record, name, secret_mask.value(value))
            if record.exc_info and record.exc_info[1] is not None:
                record.exc_text = secret_mask.text(logging.Formatter().formatException(record.exc_info))
        return True


class _MaskingFormatter(LambdaPowertoolsFormatter):
    """Masks the line as Powertools wrote it (its exception and stack trace are formatted from the exception)."""

    def serialize(self, log: Any) -> str:
        return super().serialize(secret_mask.value(log))


_names = TelemetryNames.from_env()

logger = Logger(service=_names.service, logger_formatter=_MaskingFormatter())
logger.addFilter(_MaskingFilter())
metrics = Metrics(namespace=_names.namespace, service=_names.service)

Handler = TypeVar("Handler", bound=Callable[..., Any])


@functools.cache
def _tracer() -> Tracer:
    return Tracer(service=_names.service)


def __getattr__(name: str) -> Any:
    """`tracer`, built when first asked for: building one, even disabled, imports the X-Ray SDK, a fifth of an
    executor's cold start, which tracing off need not pay."""
    if name == "tracer":
        return _tracer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _traced(handler: Handler) -> Handler:
    """The handler in an X-Ray segment when tracing is on; itself when off (POWERTOOLS_TRACE_DISABLED, or outside
    Lambda), where the Tracer would call it through anyway."""
    if Tracer._is_tracer_disabled():  # Powertools' own reading of its switch and of Lambda's markers
        return handler
    return cast(Handler, _tracer().capture_lambda_handler(handler))


def observed(*, correlation_id_path: str | None = None) -> Callable[[Handler], Handler]:
    """What every function's entry point is wrapped in: its invocation's context in each log line (cleared between
    invocations, with the correlation id found at `correlation_id_path`), a trace, and its metrics flushed."""

    def wrap(handler: Handler) -> Handler:
        traced = _traced(metrics.log_metrics(handler))
        wrapped = logger.inject_lambda_context(traced, clear_state=True, correlation_id_path=correlation_id_path)
        return cast(Handler, wrapped)

    return wrap
