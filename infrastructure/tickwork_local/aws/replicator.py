"""DynamoDB global tables' multi-Region eventual consistency (MREC), played between local tables: `tickwork dev
--regions ... --region-mode eventual` runs one between the regions' tables (docs/local.md, "Several regions").

As MREC does (AWS Prescriptive Guidance, "Overview of global tables"; docs/local.md):
- each replica's changes are read from its DynamoDB stream (NEW_AND_OLD_IMAGES, enabled here as adding a replica
  enables it), item by item, and written to every other replica after `lag_seconds`;
- a conflict (one item written in two regions within the lag) is resolved last-writer-wins by the write's
  timestamp: a replicated change is applied only if it is newer than the replica's own last write of the item.
  DynamoDB keeps that timestamp as a private system attribute of the item; here the replicator keeps it (the
  items stay exactly as the application wrote them). Ties, which the stream's millisecond timestamps allow, go to
  the region whose name sorts last, so every replica picks the same winner;
- deletes are replicated the same way (a delete is a change with no image, and has its timestamp too).

A replicated change is written only over what the replicator knows the destination holds (a condition on the item's
attributes, or its absence), as MREC's own replicated writes are conditional: a local write that landed since, not
yet read from the stream, is newer and wins. The replicator's own writes come back on the destination's stream;
they are recognised (same key and image as written) and not replicated again. A local write the condition cannot
see (one that only added attributes) comes back before the echo: the newer image is then put back.

Lag comes from the injected clock: a change read at t is applied at t + lag (`pump` applies what is due), and
`lag_seconds()` is the age of the oldest change not yet applied everywhere; `take_latencies()` how long applied
changes took, per route (what tickwork_local.aws.replication_latency publishes as ReplicationLatency). A destination that does not answer
(its endpoint killed) keeps its changes pending; they are applied when it answers again.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from tickwork.model.clock import Clock, SystemClock
from tickwork.observability import logger

STREAM_VIEW = "NEW_AND_OLD_IMAGES"  # what MREC replicates from: the item as written, and deletes
PUMP_EVERY_SECONDS = 0.2
_UNREACHABLE = (ClientError, BotoCoreError)


@dataclass(frozen=True)
class Replica:
    """One region's table, through that region's DynamoDB and DynamoDB Streams clients."""

    region: str
    table: str
    dynamodb: Any
    streams: Any


@dataclass(frozen=True)
class Change:
    """An item's change as its region's stream gave it: `image` None is a delete."""

    origin: str
    key: str  # the item's key, canonical JSON
    keys: dict[str, Any]
    image: dict[str, Any] | None
    written_at: float  # the write's timestamp (epoch seconds): what last-writer-wins compares
    seen_at: float  # when the replicator read it (its clock): the lag counts from here

    def wins_over(self, other: Change) -> bool:
        return (self.written_at, self.origin) > (other.written_at, other.origin)


def _unchanged_since(held: Change | None, keys: dict[str, Any]) -> dict[str, Any]:
    """A condition that the item is as `held` left it: absent, or each of its attributes as written."""
    image = held.image if held is not None else None
    if not image:
        return {
            "ConditionExpression": "attribute_not_exists(#k)",
            "ExpressionAttributeNames": {"#k": next(iter(keys))},
        }
    names = {f"#a{i}": name for i, name in enumerate(image)}
    values = {f":v{i}": image[name] for i, name in enumerate(image)}
    return {
        "ConditionExpression": " AND ".join(f"#a{i} = :v{i}" for i in range(len(image))),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=lambda raw: base64.b64encode(raw).decode())


@dataclass
class _ReplicaState:
    replica: Replica
    iterator: str | None = None
    # Changes due here, oldest first (one lag for all, so arrival order is due order).
    pending: deque[Change] = field(default_factory=deque)
    # Per item, the change this replica holds (its own write, or the one replicated to it).
    holds: dict[str, Change] = field(default_factory=dict)
    # Per item, the replicator's writes whose stream records are still to come back (image canonical JSON).
    echoes: dict[str, deque[tuple[str, Change]]] = field(default_factory=dict)
    failing: bool = False  # its last read or write failed (said once, not on every pump)


@dataclass
class ReplicationCounts:
    read: int = 0  # local changes read from the streams
    applied: int = 0  # changes written to another replica
    superseded: int = 0  # changes not applied: the destination held a newer write of the item (last writer won)
    repaired: int = 0  # newer local writes put back after a replicated write overtook them
    unreachable: int = 0  # reads or writes that failed (the endpoint down): retried on the next pump


class Replicator:
    def __init__(self, replicas: Sequence[Replica], *, lag_seconds: float, clock: Clock | None = None) -> None:
        if len(replicas) < 2 or len({r.region for r in replicas}) != len(replicas):
            raise ValueError("a global table needs two or more replicas, in different regions")
        if lag_seconds < 0:
            raise ValueError("the replication lag cannot be negative")
        self.lag_seconds = lag_seconds
        self.clock = clock or SystemClock()
        self.states = {r.region: _ReplicaState(r) for r in replicas}
        self.counts = ReplicationCounts()
        # The longest latency of a change applied, per (origin, destination), since take_latencies last asked.
        self._latencies: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()  # pump runs on one thread; the report may be asked from another
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _now(self) -> float:
        return self.clock.now().timestamp()

    # ------------------------------------------------------------ the streams

    def enable_streams(self) -> None:
        """Turn on each table's stream where it is off (adding a replica does, in AWS) and start reading it."""
        for state in self.states.values():
            replica = state.replica
            table = replica.dynamodb.describe_table(TableName=replica.table)["Table"]
            spec = table.get("StreamSpecification") or {}
            if not spec.get("StreamEnabled"):
                table = replica.dynamodb.update_table(
                    TableName=replica.table,
                    StreamSpecification={"StreamEnabled": True, "StreamViewType": STREAM_VIEW},
                )["TableDescription"]
            elif spec.get("StreamViewType") != STREAM_VIEW:
                raise ValueError(f"{replica.region}'s table streams {spec.get('StreamViewType')}, not {STREAM_VIEW}")
            arn = table["LatestStreamArn"]
            shard = replica.streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
            state.iterator = replica.streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]

    def _read(self, state: _ReplicaState) -> None:
        if state.iterator is None:
            raise RuntimeError("enable_streams() first")
        while True:
            answer = state.replica.streams.get_records(ShardIterator=state.iterator)
            state.iterator = answer.get("NextShardIterator") or state.iterator
            records = answer.get("Records", [])
            for record in records:
                self._take(state, record)
            if not records:
                return

    def _take(self, state: _ReplicaState, record: dict[str, Any]) -> None:
        data = record["dynamodb"]
        image = data.get("NewImage") if record["eventName"] != "REMOVE" else None
        change = Change(
            origin=state.replica.region,
            key=_canonical(data["Keys"]),
            keys=data["Keys"],
            image=image,
            written_at=data["ApproximateCreationDateTime"].timestamp(),
            seen_at=self._now(),
        )
        waiting = state.echoes.get(change.key)
        if waiting and waiting[0][0] == _canonical(image):
            _, written = waiting.popleft()
            if not waiting:
                del state.echoes[change.key]
            held = state.holds.get(change.key)
            # A local write read before this echo, newer than what was written, came in between: put it back. (Not a
            # later replicated change: that one's own write is still to come back.)
            if held is not None and held.origin == state.replica.region and held.wins_over(written):
                self._write(state, held)
                self.counts.repaired += 1
            return
        state.holds[change.key] = change  # a local write always lands, and is the newest there
        self.counts.read += 1
        for other in self.states.values():
            if other is not state:
                other.pending.append(change)

    # ------------------------------------------------------------ applying

    def _write(
        self, state: _ReplicaState, change: Change, *, over: Change | None = None, guarded: bool = False
    ) -> bool:
        """Write `change` to the replica; `guarded`: only if the item is still as `over` left it (None: absent), as
        MREC applies a replicated write only over an older one. False if a newer local write was there."""
        replica = state.replica
        condition = _unchanged_since(over, change.keys) if guarded else {}
        try:
            if change.image is not None:
                replica.dynamodb.put_item(TableName=replica.table, Item=change.image, **condition)
                echo = True
            else:
                old = replica.dynamodb.delete_item(
                    TableName=replica.table, Key=change.keys, ReturnValues="ALL_OLD", **condition
                )
                echo = bool(old.get("Attributes"))  # deleting nothing writes no stream record
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False  # a local write, not yet read from the stream, is newer: it wins
            raise
        if echo:
            state.echoes.setdefault(change.key, deque()).append((_canonical(change.image), change))
        return True

    def _apply_due(self, state: _ReplicaState, now: float) -> None:
        while state.pending and state.pending[0].seen_at + self.lag_seconds <= now:
            change = state.pending[0]
            held = state.holds.get(change.key)
            if held is not None and not change.wins_over(held):
                self.counts.superseded += 1
            # Raises if the destination is down: the change stays pending.
            elif self._write(state, change, over=held, guarded=True):
                state.holds[change.key] = change
                self.counts.applied += 1
                route = (change.origin, state.replica.region)
                self._latencies[route] = max(self._latencies.get(route, 0.0), now - change.seen_at)
            else:
                self.counts.superseded += 1
            state.pending.popleft()

    def pump(self) -> None:
        """Read every replica's new changes, then apply those whose lag has passed."""
        with self._lock:
            for state in self.states.values():
                self._guarded("read", state, lambda s=state: self._read(s))  # type: ignore[misc]
            now = self._now()
            for state in self.states.values():
                self._guarded("apply", state, lambda s=state: self._apply_due(s, now))  # type: ignore[misc]

    def _guarded(self, what: str, state: _ReplicaState, step: Any) -> None:
        try:
            step()
        except _UNREACHABLE as exc:
            self.counts.unreachable += 1
            if not state.failing:
                logger.warning(
                    "replication to or from a region failed; retried on every pump until it answers",
                    extra={"step": what, "region": state.replica.region, "error": f"{type(exc).__name__}: {exc}"},
                )
            state.failing = True
            return
        if state.failing and what == "apply":
            logger.info("replication to a region works again", extra={"region": state.replica.region})
            state.failing = False

    # ------------------------------------------------------------ the report

    def lag(self) -> float:
        """The age, in seconds, of the oldest change not yet applied to every replica (0 when none waits)."""
        with self._lock:
            oldest = [s.pending[0].seen_at for s in self.states.values() if s.pending]
            return max(0.0, self._now() - min(oldest)) if oldest else 0.0

    def take_latencies(self) -> dict[tuple[str, str], float]:
        """The longest latency, in seconds, of a change applied per (origin, destination) since the last call (as
        DynamoDB's ReplicationLatency measures what replicated); routes with nothing applied are absent."""
        with self._lock:
            taken, self._latencies = self._latencies, {}
            return taken

    def report(self) -> dict[str, Any]:
        """The lag, what waits for each region, and the counts so far."""
        lag = self.lag()
        with self._lock:
            return {
                "lag_seconds": round(lag, 3),
                "configured_lag_seconds": self.lag_seconds,
                "pending": {region: len(s.pending) for region, s in self.states.items()},
                "counts": dict(vars(self.counts)),
            }

    # ------------------------------------------------------------ in the background (tickwork dev)

    def start(self, every_seconds: float = PUMP_EVERY_SECONDS, *, after_pump: Callable[[], None] | None = None) -> None:
        """Pump in the background; `after_pump` (e.g. publishing the latencies) runs on the same thread."""

        def run() -> None:
            while not self._stop.wait(every_seconds):
                self.pump()
                if after_pump is not None:
                    after_pump()

        self._thread = threading.Thread(target=run, name="replicator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
