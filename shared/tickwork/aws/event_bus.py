"""EventBridge: publishing run events (tickwork.model.run_events) to the bus the template names (`default`
unless EventBusName says otherwise), source `tickwork`, in PutEvents batches of ten."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from tickwork.model.run_events import EVENT_SOURCE, RunEvent
from tickwork.observability import logger

BATCH = 10  # PutEvents' limit of entries per request


class EventBus:
    """Publishes events; `client` is called for the events client on first use (built lazily, then kept)."""

    def __init__(self, client: Callable[[], Any], bus_name: str) -> None:
        self._client = client
        self.bus_name = bus_name

    def publish(self, events: Sequence[RunEvent]) -> bool:
        """Put every event on the bus. True only if EventBridge took them all: a caller that keeps an outbox
        clears it only then (a failed entry is published again, with the same event_id)."""
        taken = True
        for start in range(0, len(events), BATCH):
            chunk = events[start : start + BATCH]
            answer = self._client().put_events(Entries=[self._entry(event) for event in chunk])
            if answer.get("FailedEntryCount", 0):
                taken = False
                failed = [
                    (event.event_id, entry.get("ErrorCode"))
                    for event, entry in zip(chunk, answer.get("Entries", []), strict=False)
                    if entry.get("ErrorCode")
                ]
                logger.warning("EventBridge refused events; they are published again later", extra={"failed": failed})
        return taken

    def _entry(self, event: RunEvent) -> dict[str, Any]:
        return {
            "Source": EVENT_SOURCE,
            "DetailType": event.kind.value,
            "Detail": json.dumps(event.detail, separators=(",", ":")),
            "EventBusName": self.bus_name,
            "Time": event.time,
        }
