"""Locally, the functions' metrics reach the local endpoint's CloudWatch as they reach CloudWatch on AWS.

On AWS, a function's EMF documents (the JSON lines Powertools prints, `_aws.CloudWatchMetrics`) become metric
data when CloudWatch Logs ingests them, and AWS publishes its own metrics (SQS queue depth and age, Lambda
concurrency) every minute. Locally:
- `StdoutRouter` replaces sys.stdout: a complete line that is an EMF document goes to the `EmfForwarder`, every
  other line passes through to the terminal unchanged (the raw EMF JSON stays off it);
- `EmfForwarder` turns the documents into PutMetricData calls on a background thread: one call per namespace
  and up to MAX_VALUES_PER_CALL values, equal values folded into Values/Counts; a full batch leaves the rest
  for the next call, nothing is dropped unless CloudWatch keeps failing past MAX_PENDING_VALUES;
- `AwsMetricsPlayer` puts, every 60 s, AWS/SQS ApproximateNumberOfMessagesVisible (GetQueueAttributes) and
  ApproximateAgeOfOldestMessage per band queue, and AWS/Lambda ConcurrentExecutions of the executor (the most
  invocations in flight during the minute, counted around the executor's invoke). The age is approximate: the
  oldest SentTimestamp among the messages received in the minute, at their receipt (0 when none was received
  and the queue is empty; the previous figure when messages wait and none was received).

`play_cloudwatch(node, clients)` installs all of it on a LocalNode before its pollers start.
"""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

log = logging.getLogger("tickwork_local")

MAX_VALUES_PER_CALL = 1000  # values in one PutMetricData call (Values with their Counts count once each)
MAX_VALUES_PER_DATUM = 150  # PutMetricData's limit of one MetricDatum's Values
MAX_PENDING_VALUES = 200_000  # while CloudWatch fails: beyond this, the oldest are dropped (and counted)
AWS_METRICS_PERIOD_SECONDS = 60


def emf_document(line: str) -> dict[str, Any] | None:
    """The EMF document a line holds, or None (any other line)."""
    text = line.strip()
    if not text.startswith("{") or "CloudWatchMetrics" not in text:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    aws = document.get("_aws")
    if not isinstance(aws, dict) or not isinstance(aws.get("CloudWatchMetrics"), list):
        return None
    return document


@dataclass(frozen=True)
class Datum:
    """One metric's values at one instant: what a MetricDatum carries."""

    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]
    unit: str | None
    timestamp_ms: int
    values: tuple[float, ...]


def data_of(document: dict[str, Any]) -> list[Datum]:
    """The metric data an EMF document stands for, as CloudWatch Logs reads it: per directive, per dimension set,
    per metric, the member's value (a number or a list of them) at `_aws.Timestamp`."""
    aws = document["_aws"]
    timestamp = int(aws.get("Timestamp") or time.time() * 1000)
    found = []
    for directive in aws["CloudWatchMetrics"]:
        namespace = directive.get("Namespace")
        if not namespace:
            continue
        for dimension_set in directive.get("Dimensions") or [[]]:
            if any(d not in document for d in dimension_set):
                continue  # CloudWatch Logs skips a dimension set whose member is missing
            dimensions = tuple((d, str(document[d])) for d in dimension_set)
            for metric in directive.get("Metrics", []):
                raw = document.get(metric.get("Name"))
                values = raw if isinstance(raw, list) else [raw]
                numbers = tuple(float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool))
                if numbers:
                    found.append(Datum(namespace, metric["Name"], dimensions, metric.get("Unit"), timestamp, numbers))
    return found


def metric_data(batch: Iterable[Datum]) -> list[dict[str, Any]]:
    """PutMetricData's MetricData for data of one namespace: equal values of one metric and second folded into
    Values/Counts, at most MAX_VALUES_PER_DATUM distinct values a datum."""
    merged: dict[tuple[Any, ...], Counter[float]] = {}
    for datum in batch:
        key = (datum.name, datum.dimensions, datum.unit, datum.timestamp_ms // 1000)
        merged.setdefault(key, Counter()).update(datum.values)
    out = []
    for (name, dimensions, unit, second), counts in merged.items():
        distinct = sorted(counts)
        for start in range(0, len(distinct), MAX_VALUES_PER_DATUM):
            part = distinct[start : start + MAX_VALUES_PER_DATUM]
            entry: dict[str, Any] = {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions],
                "Timestamp": datetime.fromtimestamp(second, UTC),
                "Values": part,
                "Counts": [float(counts[v]) for v in part],
            }
            if unit:
                entry["Unit"] = unit
            out.append(entry)
    return out


class EmfForwarder:
    """EMF documents to PutMetricData, batched on a background thread (`start`), or by `flush`."""

    def __init__(self, cloudwatch: Any, *, interval_seconds: float = 1.0) -> None:
        self.cloudwatch = cloudwatch
        self.interval = interval_seconds
        self._pending: list[Datum] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.calls = 0
        self.forwarded_values = 0
        self.dropped_values = 0

    def offer(self, line: str) -> bool:
        """Take the line if it is an EMF document (True); False for any other line."""
        document = emf_document(line)
        if document is None:
            return False
        data = data_of(document)
        with self._lock:
            self._pending.extend(data)
            pending = sum(len(d.values) for d in self._pending)
            while pending > MAX_PENDING_VALUES and self._pending:
                dropped = self._pending.pop(0)
                pending -= len(dropped.values)
                self.dropped_values += len(dropped.values)
        if pending >= MAX_VALUES_PER_CALL:
            self._wake.set()
        return True

    def _take_batch(self) -> tuple[str, list[Datum]] | None:
        """Up to MAX_VALUES_PER_CALL values of the oldest pending namespace (a datum is split if it must be)."""
        with self._lock:
            if not self._pending:
                return None
            namespace = self._pending[0].namespace
            batch: list[Datum] = []
            room = MAX_VALUES_PER_CALL
            rest: list[Datum] = []
            for datum in self._pending:
                if datum.namespace != namespace or room == 0:
                    rest.append(datum)
                    continue
                if len(datum.values) <= room:
                    batch.append(datum)
                    room -= len(datum.values)
                    continue
                batch.append(_with_values(datum, datum.values[:room]))
                rest.append(_with_values(datum, datum.values[room:]))
                room = 0
            self._pending = rest
            return namespace, batch

    def _give_back(self, batch: list[Datum]) -> None:
        with self._lock:
            self._pending[:0] = batch

    def flush(self) -> int:
        """Send everything pending now; the number of calls made. A failed call keeps its data for later."""
        made = 0
        while (taken := self._take_batch()) is not None:
            namespace, batch = taken
            try:
                self.cloudwatch.put_metric_data(Namespace=namespace, MetricData=metric_data(batch))
            except Exception as exc:  # the endpoint is down or refused: keep the data, try again later
                self._give_back(batch)
                log.warning("PutMetricData failed (%s); %d values wait", exc, sum(len(d.values) for d in batch))
                return made
            made += 1
            self.calls += 1
            self.forwarded_values += sum(len(d.values) for d in batch)
        return made

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="emf-forwarding", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self.flush()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)
        self.flush()


def _with_values(datum: Datum, values: tuple[float, ...]) -> Datum:
    return Datum(datum.namespace, datum.name, datum.dimensions, datum.unit, datum.timestamp_ms, values)


class StdoutRouter(io.TextIOBase):
    """A thread-safe stdout: each thread's text is cut into lines; an EMF line goes to `offer`, any other line to
    `target` whole (print writes a line's text and its newline in two calls: lines are never interleaved)."""

    def __init__(self, target: TextIO, offer: Callable[[str], bool]) -> None:
        self.target = target
        self.offer = offer
        self._partial = threading.local()
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        buffered = getattr(self._partial, "text", "") + text
        *lines, rest = buffered.split("\n")
        self._partial.text = rest
        for line in lines:
            if not self.offer(line):
                with self._lock:
                    self.target.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self.target.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", "utf-8")

    def isatty(self) -> bool:
        return self.target.isatty()

    def fileno(self) -> int:
        return self.target.fileno()


@dataclass
class InFlight:
    """Invocations of one function in flight, and the most there were since the last `take_peak`."""

    current: int = 0
    peak: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, invoke: Callable[[Any], Any], on_event: Callable[[Any], None]) -> Callable[[Any], Any]:
        def counted(event: Any) -> Any:
            on_event(event)
            with self._lock:
                self.current += 1
                self.peak = max(self.peak, self.current)
            try:
                return invoke(event)
            finally:
                with self._lock:
                    self.current -= 1

        return counted

    def take_peak(self) -> int:
        with self._lock:
            peak, self.peak = self.peak, self.current
            return peak


class AwsMetricsPlayer:
    """AWS's own metrics of the band queues and the executor, put every minute (see the module's notes)."""

    def __init__(self, sqs: Any, cloudwatch: Any, queue_urls: dict[str, str], executor_function: str) -> None:
        self.sqs = sqs
        self.cloudwatch = cloudwatch
        self.queue_urls = queue_urls  # band -> URL
        self.executor_function = executor_function
        self.in_flight = InFlight()
        self._oldest_sent_ms: dict[str, int] = {}  # queue name -> oldest SentTimestamp received this minute
        self._last_age: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def saw(self, event: Any) -> None:
        """An executor invocation's SQS event: the oldest message's SentTimestamp per queue."""
        for record in (event or {}).get("Records", []) if isinstance(event, dict) else []:
            name = str(record.get("eventSourceARN", "")).rsplit(":", 1)[-1]
            sent = record.get("attributes", {}).get("SentTimestamp")
            if name and sent:
                with self._lock:
                    self._oldest_sent_ms[name] = min(int(sent), self._oldest_sent_ms.get(name, int(sent)))

    def publish(self, now: float | None = None) -> None:
        at = now if now is not None else time.time()
        data: list[dict[str, Any]] = []
        with self._lock:
            oldest, self._oldest_sent_ms = self._oldest_sent_ms, {}
        for url in self.queue_urls.values():
            name = url.rstrip("/").rsplit("/", 1)[-1]
            depth = int(
                self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
                    "Attributes"
                ]["ApproximateNumberOfMessages"]
            )
            if name in oldest:
                age = max(0.0, at - oldest[name] / 1000)
            else:
                age = self._last_age.get(name, 0.0) if depth else 0.0
            self._last_age[name] = age
            dims = [{"Name": "QueueName", "Value": name}]
            stamp = datetime.fromtimestamp(at, UTC)
            data.append(
                {
                    "MetricName": "ApproximateNumberOfMessagesVisible",
                    "Dimensions": dims,
                    "Timestamp": stamp,
                    "Value": float(depth),
                    "Unit": "Count",
                }
            )
            data.append(
                {
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": dims,
                    "Timestamp": stamp,
                    "Value": round(age),
                    "Unit": "Seconds",
                }
            )
        self.cloudwatch.put_metric_data(Namespace="AWS/SQS", MetricData=data)
        self.cloudwatch.put_metric_data(
            Namespace="AWS/Lambda",
            MetricData=[
                {
                    "MetricName": "ConcurrentExecutions",
                    "Dimensions": [{"Name": "FunctionName", "Value": self.executor_function}],
                    "Timestamp": datetime.fromtimestamp(at, UTC),
                    "Value": float(self.in_flight.take_peak()),
                    "Unit": "Count",
                }
            ],
        )

    def start(self) -> None:
        threading.Thread(target=self._loop, name="aws-metrics", daemon=True).start()

    def _loop(self) -> None:
        while not self._stop.wait(AWS_METRICS_PERIOD_SECONDS):
            try:
                self.publish()
            except Exception as exc:  # the endpoint is gone (shutting down): try again next minute
                log.warning("could not put the AWS metrics: %s", exc)

    def stop(self) -> None:
        self._stop.set()


@dataclass
class CloudWatchPlay:
    forwarder: EmfForwarder
    aws_metrics: AwsMetricsPlayer
    router: StdoutRouter

    def stop(self) -> None:
        self.aws_metrics.stop()
        self.forwarder.stop()
        if sys.stdout is self.router:
            sys.stdout = self.router.target


def play_cloudwatch(node: Any, clients: Any, *, executor: str = "ExecutorFunction") -> CloudWatchPlay:
    """Install on a LocalNode, after its functions are built and before its pollers start: the stdout router and
    EMF forwarding, the executor's in-flight count, and the AWS metrics every minute. The API is told the
    executor's local concurrency (its share of --workers), the local MaximumConcurrency."""
    import os  # noqa: PLC0415 - the one place the local runtime sets what the API's settings read

    cloudwatch = clients.client("cloudwatch")
    forwarder = EmfForwarder(cloudwatch)
    router = StdoutRouter(sys.stdout, forwarder.offer)
    function = node.functions[executor]
    player = AwsMetricsPlayer(
        clients.client("sqs"), cloudwatch, dict(node.resources.queue_urls), function.function_name
    )
    function.invoke = player.in_flight.wrap(function.invoke, player.saw)
    os.environ["EXECUTOR_FUNCTION_NAME"] = function.function_name
    os.environ["EXECUTOR_CONCURRENCY"] = str(max(1, sum(node.concurrency.values())))
    sys.stdout = router
    forwarder.start()
    player.start()
    return CloudWatchPlay(forwarder, player, router)
