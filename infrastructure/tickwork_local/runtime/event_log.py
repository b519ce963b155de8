"""The run events the local node's functions publish (tickwork.model.run_events), printed and kept for
`GET /_tickwork/events`: by an ordinary EventBridge rule on moto (source `tickwork`, on the bus the template's
EventBusName names) whose target is an SQS queue this node drains, as a user's own rule would deliver them."""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

from botocore.exceptions import ClientError

EVENTS_PATH = "/_tickwork/events"
KEPT = 1000  # the newest events kept for the list; older ones are only in the printed lines


class LocalEventLog:
    def __init__(self, clients: Any, *, prefix: str, bus_name: str, line: Any) -> None:
        """`clients`: the node's AwsClients (its SQS and EventBridge clients)."""
        self.sqs, self.events = clients.client("sqs"), clients.client("events")
        self.prefix, self.bus_name = prefix, bus_name
        self.line = line  # prints one line (the runtime's RunLog.line)
        self.queue_url = ""
        self._kept: deque[dict[str, Any]] = deque(maxlen=KEPT)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set_up(self) -> None:
        """The bus (unless the default), the queue and the rule; each found if another node made it."""
        if self.bus_name != "default":
            try:
                self.events.create_event_bus(Name=self.bus_name)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ResourceAlreadyExistsException":
                    raise
        name = f"{self.prefix}-run-events"
        self.queue_url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.events.put_rule(
            Name=name, EventBusName=self.bus_name, EventPattern=json.dumps({"source": ["tickwork"]}), State="ENABLED"
        )
        self.events.put_targets(Rule=name, EventBusName=self.bus_name, Targets=[{"Id": "local-event-log", "Arn": arn}])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._drain, name="run-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def listed(self) -> list[dict[str, Any]]:
        """The events kept, oldest first."""
        with self._lock:
            return list(self._kept)

    def _drain(self) -> None:
        while not self._stop.is_set():
            try:
                messages = self.sqs.receive_message(
                    QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
                ).get("Messages", [])
            except Exception as exc:  # the endpoint going away at shutdown, or a blip: try again
                self._stop.wait(1.0)
                if not self._stop.is_set():
                    self.line(f"run events: could not read their queue ({type(exc).__name__})")
                continue
            for message in messages:
                self.keep(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def keep(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._kept.append(event)
        detail = event.get("detail") or {}
        subject = detail.get("run_id") or detail.get("job_id") or detail.get("freeze_id") or ""
        self.line(f"event {event.get('detail-type')}: {subject} ({detail.get('event_id')})")
