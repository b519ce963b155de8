"""A warming invocation (tickwork.tick.warmup, before a burst): the execution environment builds what a run needs
(the wiring and its clients) and holds a moment, so that invocations sent together start environments of their
own; it runs nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tickwork.model.clock import Clock
from tickwork.model.warmup import WarmRequest
from tickwork.observability import metrics


def warm_environment(build: Callable[[], Any], clock: Clock, request: WarmRequest) -> dict[str, bool]:
    """Build (`build`: what a run's execution needs, built once per environment), then hold `request.hold_ms`."""
    build()
    clock.sleep(request.hold_ms / 1000)
    metrics.add_metric(name="ExecutorWarmed", unit="Count", value=1)
    return {"warmed": True}
