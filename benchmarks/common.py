"""What every section shares: the moto session, the machine stamp, timing statistics, and the AWS meter.

The meter is a botocore event hook on the pipeline's own clients (as tests/harness.CallLog is). For each
call it records the service and operation and what the bill depends on:

- DynamoDB: moto answers ReturnConsumedCapacity (the meter asks for TOTAL on every call) with a constant
  (1.0 for a write whatever its size and indexes, 0.5 for a read), so write and read units are *computed*
  by DynamoDB's documented rules from the item images before and after each write, read straight out of
  moto's backend (no extra request): 1 WRU per started KB of the larger image, plus, per global secondary
  index, 1 write per started KB of the index entry when an item enters, leaves or changes a projected
  attribute of the index (2 when its index key changes). Reads: 1 RRU per started 4 KB, half when
  eventually consistent (GSI queries always are). moto's reported figure is kept alongside, for the record.
  A TransactWriteItems (an audited change: the change's write and its audit record's put) bills each of its items'
  table writes twice (prepare and commit: 2 WRU per started KB), and their index writes as any write's (a GSI is
  updated after the transaction commits, outside it); TRANSACTION_FACTOR.
- SQS: ReceiveMessage is split into receives that returned messages and empty ones (the harness's last poll
  of a drained queue; in AWS that is the event source mapping's idle polling, costed in section 2).
"""

from __future__ import annotations

import base64
import gc
import math
import os
import platform
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import moto
from moto import mock_aws
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from tickwork.control.api_bodies import JobSpec
from tickwork.model.audit import Actor, ActorKind, Attribution
from tickwork.model.clock import iso
from tickwork.store import job_to_item
from tickwork_local.aws.moto_atomic import atomic_requests_in_process
from tickwork_local.aws.motoserver import serialize_item_responses_directly
from tickwork_local.stack.template import load_template

from benchmarks import ROOT

KB = 1024
# The caller of the benchmarks' creates, as the API attributes a SigV4 request (tickwork.control.callers
# .attribution_of): a role's session, API Gateway's request id and source IP, and the CLI's user agent. Its record
# goes with the create, one transaction, as POST /v1/jobs and POST /v1/workflows write it.
API_CALLER = Attribution(
    actor=Actor(
        kind=ActorKind.IAM,
        id="arn:aws:sts::123456789012:assumed-role/platform-scheduler/ci-deploy-7f3a",
        display="platform-scheduler/ci-deploy-7f3a",
    ),
    request_id="JKJaXmPLvHcESHA=",
    source_ip="203.0.113.17",
    user_agent="tickwork-cli/0.1.0",
)
ACCOUNT_ID = "123456789012"  # moto's default account (tickwork_local.aws.provision.LOCAL_ACCOUNT_ID)
REGION = "us-east-1"


# ---------------------------------------------------------------- machine and command stamp


@dataclass(frozen=True)
class Stamp:
    """Where and when a figure was measured, printed next to it."""

    command: str
    cores: int
    date: str
    python: str
    moto: str
    machine: str

    @classmethod
    def now(cls, command: str) -> Stamp:
        return cls(
            command=command,
            cores=os.cpu_count() or 1,
            date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            python=platform.python_version(),
            moto=moto.__version__,
            machine=f"{platform.system()} {platform.machine()}",
        )

    def line(self) -> str:
        return (
            f"`{self.command}` · {self.cores} cores ({self.machine}) · {self.date} · "
            f"Python {self.python}, moto {self.moto}"
        )


# ---------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100): the smallest value with at least p% of values at or below it."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return float(ordered[rank - 1])


@contextmanager
def stopwatch(*, quiet_gc: bool = False) -> Iterator[Callable[[], float]]:
    """`with stopwatch() as elapsed:` ... `elapsed()` is seconds since entry (frozen at exit).

    `quiet_gc`: collect first and keep the cyclic GC off inside, so that what else the process holds
    (earlier tables, queues) does not bill its collections to the code being timed."""
    if quiet_gc:
        gc.collect()
        gc.disable()
    started = time.perf_counter()
    ended: list[float] = []
    try:
        yield lambda: (ended[0] if ended else time.perf_counter()) - started
    finally:
        ended.append(time.perf_counter())
        if quiet_gc:
            gc.enable()


# ---------------------------------------------------------------- moto


@contextmanager
def moto_session() -> Iterator[None]:
    """In-process moto with DynamoDB's per-request atomicity kept (as tests/conftest.py's `mocked_aws`), and its
    item answers written as the local endpoint writes them (`serialize_item_responses_directly`: the same JSON,
    without moto 5.2's serializer walking every value), so that the timed sections measure Tickwork and moto's
    request handling rather than that serializer. It applies to a section's own requests and to moto's raw
    ceiling alike; the request and WRU counts do not depend on it."""
    serialize_item_responses_directly()
    with mock_aws(), atomic_requests_in_process():
        yield


def moto_table(table_name: str) -> Any:
    return dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)


# ---------------------------------------------------------------- DynamoDB item sizes (documented rules)


def _number_size(text: str) -> int:
    """About 1 byte per two significant digits, plus 1 (leading and trailing zeros trimmed)."""
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def value_size(value: Mapping[str, Any]) -> int:
    """Size of one attribute value in DynamoDB JSON ({"S": ...}, {"N": ...}, {"M": {...}}, ...)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return _number_size(inner)
    if kind == "B":
        return len(inner) if isinstance(inner, bytes) else len(base64.b64decode(inner))  # moto keeps it as base64
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "NS":
        return sum(_number_size(n) for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def item_size(item: Mapping[str, Any] | None) -> int:
    """Attribute names plus values, in bytes (the size DynamoDB bills a write or read by)."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


@dataclass(frozen=True)
class IndexDef:
    name: str
    keys: tuple[str, ...]
    projection: str  # ALL | KEYS_ONLY | INCLUDE
    include: tuple[str, ...] = ()

    def entry(self, item: Mapping[str, Any] | None, table_keys: Sequence[str]) -> dict[str, Any] | None:
        """The item's entry in this (sparse) index, or None if it lacks the index keys."""
        if not item or any(k not in item for k in self.keys):
            return None
        if self.projection == "ALL":
            return dict(item)
        names = set(self.keys) | set(table_keys) | (set(self.include) if self.projection == "INCLUDE" else set())
        return {k: v for k, v in item.items() if k in names}


def index_defs_from_template() -> tuple[tuple[str, ...], list[IndexDef]]:
    """The table's key and GSIs, read from template.yaml (the same source provisioning uses)."""
    resources = load_template()["Resources"]
    (props,) = [r["Properties"] for r in resources.values() if r.get("Type") == "AWS::DynamoDB::Table"]
    table_keys = tuple(k["AttributeName"] for k in props["KeySchema"])
    indexes = [
        IndexDef(
            name=g["IndexName"],
            keys=tuple(k["AttributeName"] for k in g["KeySchema"]),
            projection=g["Projection"]["ProjectionType"],
            include=tuple(g["Projection"].get("NonKeyAttributes", ())),
        )
        for g in props.get("GlobalSecondaryIndexes", [])
    ]
    return table_keys, indexes


def units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


def write_units(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    table_keys: Sequence[str],
    indexes: Sequence[IndexDef],
) -> dict[str, int]:
    """WRU of one successful write, split into the table and each GSI (DynamoDB's documented rules)."""
    result = {"table": units(max(item_size(before), item_size(after)), KB)}
    for index in indexes:
        old, new = index.entry(before, table_keys), index.entry(after, table_keys)
        wru = 0
        if old is None and new is not None:
            wru = units(item_size(new), KB)  # enters the index
        elif old is not None and new is None:
            wru = units(item_size(old), KB)  # leaves it
        elif old is not None and new is not None:
            if any(old.get(k) != new.get(k) for k in index.keys):
                wru = units(item_size(old), KB) + units(item_size(new), KB)  # key moved: delete + put
            elif old != new:
                wru = units(item_size(new), KB)  # a projected attribute changed
        result[index.name] = wru
    return result


# ---------------------------------------------------------------- the meter


@dataclass
class Call:
    service: str
    operation: str
    empty: bool = False  # ReceiveMessage that returned nothing
    failed: str | None = None  # error code, if any
    wru: dict[str, int] = field(default_factory=dict)
    rru: float = 0.0
    moto_capacity: float | None = None  # what moto reported for ReturnConsumedCapacity=TOTAL
    size: int = 0  # DynamoDB: bytes billed (the larger image of a write, the items of a read)
    item: str = ""  # DynamoDB: which kind of item a single-item call touched (job, run, shard, ...)
    messages: int = 0  # SQS entries sent / received / deleted


_WRITES = {"PutItem", "UpdateItem", "DeleteItem"}
TRANSACT_WRITE = "TransactWriteItems"
# A transactional write bills its item's table write twice, prepare and commit (DynamoDB developer guide: "Read and
# write operations", "Capacity management for transactions"); the indexes are updated after it commits, as any
# write's.
TRANSACTION_FACTOR = 2


def item_kind(key: Mapping[str, Any] | None) -> str:
    """job | run | workflow | workflow run | step run | shard | other, from Tickwork's key layout
    (tickwork.store): JOB#id/JOB, JOB#id/RUN#..., JOB#id/STEP#..., SHARD#n; a workflow's id starts with w."""
    if not key:
        return ""
    pk = str(key.get("pk", {}).get("S", ""))
    sk = str(key.get("sk", {}).get("S", ""))
    if pk.startswith("JOB#w"):
        if sk == "JOB":
            return "workflow"
        return "workflow run" if sk.startswith("RUN#") else "step run" if sk.startswith("STEP#") else "job-other"
    if pk.startswith("JOB#"):
        return "job" if sk == "JOB" else "run" if sk.startswith("RUN#") else "job-other"
    if pk.startswith("SHARD#"):
        return "shard lease"
    return pk.split("#", 1)[0].lower() or "other"


_READS = {"GetItem", "Query", "Scan"}


class AwsMeter:
    """Records every call of the clients it is attached to, with computed DynamoDB capacity units."""

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name
        self.table_keys, self.indexes = index_defs_from_template()
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.enabled = True

    def attach(self, client: Any) -> None:
        service_id = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register(f"before-parameter-build.{service_id}.*", self._before)
        client.meta.events.register(f"after-call.{service_id}.*", self._after)

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    # -- hooks

    def _key_of(self, operation: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        if operation == "PutItem":
            return {k: params["Item"][k] for k in self.table_keys}
        if "Key" in params:
            return dict(params["Key"])
        return None

    def _image(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        table = moto_table(self.table_name)
        hash_key = DynamoType(key[self.table_keys[0]])
        range_key = DynamoType(key[self.table_keys[1]]) if len(self.table_keys) > 1 else None
        item = table.get_item(hash_key, range_key)
        return None if item is None else item.to_json()["Attributes"]

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any) -> None:
        if not self.enabled or model.service_model.service_name != "dynamodb":
            return
        if model.name in _WRITES or model.name in _READS or model.name == TRANSACT_WRITE:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")
        if model.name == TRANSACT_WRITE and context is not None:
            self._write_lock.acquire()  # as for a single write, below
            context["bench_locked"] = True
            keys = [
                self._key_of(f"{action}Item", body)
                for item in params.get("TransactItems", [])
                for action, body in item.items()
                if action in ("Put", "Update", "Delete") and body.get("TableName") == self.table_name
            ]
            context["bench_transaction"] = [(key, self._image(key) if key else None) for key in keys]
        if model.name == "GetItem" and context is not None:
            context["bench_consistent"] = bool(params.get("ConsistentRead", False))
            context["bench_key"] = dict(params.get("Key", {}))
        if model.name in _WRITES and params.get("TableName") == self.table_name and context is not None:
            # One write at a time from its before-image to its after-image: the executor runs a batch's records on
            # threads, and two of them writing one item (a workflow run) would otherwise see each other's change
            # in their images, and bill it twice or not at all. Released in _after (after-call comes for errors too).
            self._write_lock.acquire()
            context["bench_locked"] = True
            key = self._key_of(model.name, params)
            context["bench_key"] = key
            context["bench_before"] = self._image(key) if key else None

    def _after(self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        try:
            self._record(parsed, model, context)
        finally:
            if context.pop("bench_locked", False):
                self._write_lock.release()

    def _record(self, parsed: dict[str, Any], model: Any, context: dict[str, Any]) -> None:
        if not self.enabled:
            return
        service = model.service_model.service_name
        call = Call(service, model.name)
        error = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        call.failed = error
        if service == "dynamodb":
            call.item = item_kind(context.get("bench_key"))
            consumed = parsed.get("ConsumedCapacity")
            if isinstance(consumed, dict):
                call.moto_capacity = float(consumed.get("CapacityUnits", 0))
            if model.name == TRANSACT_WRITE and "bench_transaction" in context:
                self._transaction(call, context["bench_transaction"], failed=bool(error))
            elif model.name in _WRITES and "bench_key" in context:
                before = context.get("bench_before")
                if error:
                    call.size = item_size(before)
                    call.wru = {"table": units(call.size, KB)}  # a failed condition still bills
                else:
                    after = self._image(context["bench_key"]) if context["bench_key"] else None
                    call.size = max(item_size(before), item_size(after))
                    call.wru = write_units(before, after, self.table_keys, self.indexes)
            elif model.name == "GetItem":
                size = call.size = item_size(parsed.get("Item"))
                call.rru = units(size, 4 * KB) * (1.0 if context.get("bench_consistent", False) else 0.5)
            elif model.name in ("Query", "Scan"):
                size = call.size = sum(item_size(i) for i in parsed.get("Items", []))
                call.rru = units(size, 4 * KB) * 0.5  # GSI queries are eventually consistent
        elif service == "sqs":
            if model.name == "ReceiveMessage":
                call.messages = len(parsed.get("Messages", []))
                call.empty = call.messages == 0
            elif model.name in ("SendMessageBatch", "DeleteMessageBatch"):
                call.messages = len(parsed.get("Successful", []))
            elif model.name == "SendMessage":
                call.messages = 1
        with self._lock:
            self.calls.append(call)

    def _transaction(self, call: Call, written: list[tuple[Any, Any]], *, failed: bool) -> None:
        """A transaction's items: each one's table write at TRANSACTION_FACTOR, its index writes as a write's."""
        call.item = "+".join(item_kind(key) for key, _ in written)
        wru: dict[str, int] = defaultdict(int)
        for key, before in written:
            if failed:
                call.size += item_size(before)
                wru["table"] += TRANSACTION_FACTOR * units(item_size(before), KB)
                continue
            after = self._image(key) if key else None
            call.size += max(item_size(before), item_size(after))
            for part, n in write_units(before, after, self.table_keys, self.indexes).items():
                wru[part] += n * (TRANSACTION_FACTOR if part == "table" else 1)
        call.wru = dict(wru)

    # -- summaries

    def count(self, *, include_empty_receives: bool = False) -> Counter[tuple[str, str]]:
        return Counter(
            (c.service, c.operation + (" (empty)" if c.empty else ""))
            for c in self.calls
            if include_empty_receives or not c.empty
        )

    def wru_by_operation(self) -> dict[tuple[str, str], dict[str, int]]:
        out: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for c in self.calls:
            for part, wru in c.wru.items():
                out[("dynamodb", c.operation)][part] += wru
        return {k: dict(v) for k, v in out.items()}

    def total_wru(self) -> int:
        return sum(sum(c.wru.values()) for c in self.calls)

    def total_rru(self) -> float:
        return sum(c.rru for c in self.calls)

    def moto_reported_wcu(self) -> float:
        return sum(c.moto_capacity or 0 for c in self.calls if c.operation in _WRITES)


class PhaseMeter:
    """An AwsMeter on a pipeline's DynamoDB, SQS and S3 clients, its calls split into named phases."""

    def __init__(self, pipeline: Any) -> None:
        self.meter = AwsMeter(pipeline.resources.table_name)
        for service in ("dynamodb", "sqs", "s3"):
            self.meter.attach(pipeline.services.clients.client(service))
        self.phases: dict[str, list[Call]] = {}
        self._mark = 0

    def close(self, phase: str) -> None:
        """The calls since the last phase closed are `phase`'s (added to its earlier ones, if it closed before)."""
        self.phases[phase] = self.phases.get(phase, []) + self.meter.calls[self._mark :]
        self._mark = len(self.meter.calls)

    def all_calls(self) -> list[Call]:
        return [c for calls in self.phases.values() for c in calls]


def as_plain(value: Any) -> Any:
    """Decimals and tuples to JSON-friendly values (for results.json)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): as_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_plain(v) for v in value]
    return value


def repo_relative(path: os.PathLike[str] | str) -> str:
    try:
        return str(os.path.relpath(path, ROOT))
    except ValueError:
        return str(path)


def command_line() -> str:
    """How this process was started, as a user would type it."""
    args = " ".join(sys.argv[1:])
    return f"python -m benchmarks.run {args}".strip()


class CallTimer:
    """Start and end (perf_counter) of every call of the clients it is attached to: phases of a tick."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        service_id = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register(f"before-parameter-build.{service_id}.*", self._before)
        client.meta.events.register(f"after-call.{service_id}.*", self._after)

    def _before(self, context: dict[str, Any] | None = None, **_: Any) -> None:
        if context is not None:
            context["bench_started"] = time.perf_counter()

    def _after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        ended = time.perf_counter()
        with self._lock:
            self.spans.append((model.name, context.get("bench_started", ended), ended))

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()

    def window(self, *operations: str) -> float:
        """Seconds from the first start to the last end of these operations (0 if none)."""
        spans = [s for s in self.spans if s[0] in operations]
        return max(e for _, _, e in spans) - min(s for _, s, _ in spans) if spans else 0.0


def seed_one_shots(
    pipeline: Any,
    count: int,
    at: datetime,
    *,
    tag: str = "seed",
    tenant: str = "default",
    spread: timedelta = timedelta(0),
    priorities: int | None = None,
) -> list[Any]:
    """Store `count` one-shot echo jobs due at `at` (job i at `at` + i * `spread`; with `priorities`, priority
    i % `priorities`, else the default),
    exactly as JobLifecycle.create_job would write them (JobFactory.new_job, then tickwork.store.job_to_item), but
    25 to a BatchWriteItem: set-up, not measured."""
    factory, store = pipeline.services.job_factory, pipeline.services.store
    db = pipeline.services.clients.client("dynamodb")
    now = pipeline.clock.now()

    def spec(i: int) -> JobSpec:
        return JobSpec.model_validate(
            {
                "type": "echo",
                "schedule": {"at": iso(at + i * spread)},
                "name": f"{tag} {i}",
                "payload": {"n": i},
                **({} if priorities is None else {"priority": i % priorities}),
            }
        )

    jobs = [factory.new_job(tenant, spec(i), now=now) for i in range(count)]
    for start in range(0, count, 25):
        items = [{"PutRequest": {"Item": job_to_item(job, store.shards)}} for job in jobs[start : start + 25]]
        db.batch_write_item(RequestItems={store.table: items})
    return jobs
