"""The local AWS endpoint: moto's ThreadedMotoServer, so boto3 talks real HTTP to it, with the two things
real AWS does that moto's server does not: each call is atomic, a long poll returns as soon as a
message becomes visible, and a standard queue whose messages carry a group serves them as an SQS fair queue
(tickwork_local.aws.moto_atomic.play_fair_queues).

And what keeps it quick (issue 16; docs/benchmarks.md, "Burst"): connections stay open between requests
(`keep_connections_alive`), and moto's routing and SQS clock skip work they repeated on every request
(`skip_repeated_work`), and DynamoDB's item responses are written as the JSON they already are
(`serialize_item_responses_directly`), and DynamoDB's expressions are evaluated without the work moto repeats
on every request (tickwork_local.aws.moto_expressions), all with the same answers. `GET /_tickwork/requests` gives the requests served so far by
`service:Operation`, so a benchmark can count AWS requests per run of a node it drives from outside.

`tickwork dev` runs it in a child process (`python -m tickwork_local.aws.motoserver`, started by
`tickwork_local.aws.endpoint.MotoProcess`): moto holds the GIL while it serves a request, and in a process of
its own it does not compete with the handlers for it. The child ignores Ctrl-C (its parent drains first,
then stops it) and exits on its own when its parent dies, even by SIGKILL.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import logging
import os
import signal
import sys
import threading
import time
from collections import Counter
from typing import Any

import botocore.session
from moto import backends as moto_backends
from moto.core.utils import convert_to_flask_response, unix_time_millis
from moto.dynamodb.responses import DynamoHandler, DynamoResult
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler
from moto.server import ThreadedMotoServer
from moto.sqs import models as sqs_models
from moto.sqs.models import Message, Queue, sqs_backends

from tickwork_local.aws.endpoint import READY_PREFIX, PortInUse, check_port_free
from tickwork_local.aws.moto_atomic import play_fair_queues
from tickwork_local.aws.moto_cloudwatch import play_cloudwatch_statistics
from tickwork_local.aws.moto_expressions import evaluate_expressions_quicker
from tickwork_local.aws.moto_message_moves import play_message_move_tasks
from tickwork_local.aws.moto_one_dynamodb import share_one_dynamodb
from tickwork_local.aws.moto_transactions import roll_back_transactions_by_item

# Set to `arrival` to serve standard queues in moto's own order (oldest first) instead of as SQS fair queues: only
# for measuring what fair queues change (benchmarks.fairness's control phase), never for use.
QUEUE_ORDER_VARIABLE = "TICKWORK_LOCAL_SQS_ORDER"


# GET this path on the local endpoint: the requests it has served so far, by kind ({"dynamodb:PutItem": 12, ...}).
# The benchmarks read it to count AWS requests per run in a runtime they drive from outside (benchmarks.burst).
REQUEST_COUNTS_PATH = "/_tickwork/requests"


def _prepare_moto() -> None:
    serialize_requests()
    count_requests()
    if os.environ.get(QUEUE_ORDER_VARIABLE) != "arrival":
        play_fair_queues()  # under serialize_requests' lock, like every other request's work
    play_cloudwatch_statistics()  # percentiles and metric math in GetMetricData, as CloudWatch answers
    play_message_move_tasks()  # a dead-letter queue's redrive (StartMessageMoveTask), as SQS documents it
    roll_back_transactions_by_item()  # a transaction's backup: its items, not copies of whole tables
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # werkzeug formats a log line per request before it looks at the level: skip it.
    MotoRequestHandler.log_request = lambda self, code="-", size="-": None  # type: ignore[method-assign]
    keep_connections_alive()
    skip_repeated_work()
    serialize_item_responses_directly()
    evaluate_expressions_quicker()


_serial = threading.Lock()
_holding = threading.local()


def serialize_requests() -> None:
    """Make moto serve one request at a time (a waiting long poll excepted), as AWS makes each call atomic.

    moto's server runs requests in concurrent threads without locks, so two conditional writes to one item
    can both pass their condition (both executors "lease" a run), and two receives can take the same
    message. Tickwork's exactly-once promises rest on that atomicity, so the local endpoint must have it.
    moto is bound by the GIL anyway: serving requests one by one costs no throughput. Idempotent.
    """
    if getattr(convert_to_flask_response, "_tickwork_serialized", False):
        return
    call = convert_to_flask_response.__call__
    wait = Queue.wait_for_messages

    def serialized_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _serial:
            _holding.value = True
            try:
                return call(self, *args, **kwargs)
            finally:
                _holding.value = False

    def wait_unlocked(self: Any, timeout: int) -> None:
        if not getattr(_holding, "value", False):
            wait(self, timeout)
            return
        _holding.value = False
        _serial.release()  # a long poll waits without holding up everyone else
        try:
            wait(self, timeout)
        finally:
            _serial.acquire()
            _holding.value = True

    convert_to_flask_response.__call__ = serialized_call  # type: ignore[method-assign]
    Queue.wait_for_messages = wait_unlocked  # type: ignore[method-assign]
    convert_to_flask_response._tickwork_serialized = True  # type: ignore[attr-defined]


class _BodyAlreadyRead:
    """A connection's input once the request body has been read whole: werkzeug's after-response drain, which
    would swallow the next request on a kept-alive connection, reads nothing; request lines and headers are
    read from the connection as before."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def read(self, size: int = -1) -> bytes:
        return b""

    def __getattr__(self, name: str) -> Any:  # readline, close, ... as the connection's own
        return getattr(self.raw, name)


def keep_connections_alive() -> None:
    """Let a client send request after request on one connection (HTTP/1.1 keep-alive), as AWS endpoints do.

    werkzeug's server answers every request with `Connection: close` and then drains the socket, because
    Python's http.server cannot skip a request body the application left unread. So every boto3 call paid a
    new TCP connection, and moto a new thread to serve it. Here the body is read whole before the application
    sees it (the same bytes, as a stream), so nothing is left unread: the drain has nothing to do and the
    connection stays open. A body without a Content-Length (chunked) keeps werkzeug's way. Idempotent."""
    if getattr(MotoRequestHandler, "_tickwork_patched_keep_alive", False):
        return
    make_environ = MotoRequestHandler.make_environ
    send_header = MotoRequestHandler.send_header

    def read_body_first(self: Any) -> dict[str, Any]:
        if isinstance(self.rfile, _BodyAlreadyRead):
            self.rfile = self.rfile.raw  # the previous request's: this one reads its own body
        environ = make_environ(self)
        length = self.headers.get("Content-Length")
        self._tickwork_body_read = not self.headers.get("Transfer-Encoding") and (
            length is not None or self.command in ("GET", "HEAD", "DELETE", "OPTIONS")
        )
        if self._tickwork_body_read:
            environ["wsgi.input"] = io.BytesIO(self.rfile.read(int(length or 0)))
            self.rfile = _BodyAlreadyRead(self.rfile)
        return environ  # type: ignore[no-any-return]

    def keep_open(self: Any, keyword: str, value: str) -> None:
        if keyword.lower() == "connection" and value.lower() == "close" and getattr(self, "_tickwork_body_read", False):
            return  # the body was read whole: the next request on this connection parses cleanly
        send_header(self, keyword, value)

    # The status line and headers, then the body, go out in separate writes: on an open connection, Nagle's
    # algorithm would hold the body back until the client's delayed ACK (40 ms) of the headers.
    MotoRequestHandler.disable_nagle_algorithm = True
    MotoRequestHandler.make_environ = read_body_first  # type: ignore[method-assign]
    MotoRequestHandler.send_header = keep_open  # type: ignore[method-assign]
    MotoRequestHandler._tickwork_patched_keep_alive = True  # type: ignore[attr-defined]


_MOTOS_SQS_CLOCK = sqs_models.unix_time_millis


def _sqs_now_ms() -> float:
    """moto's SQS clock, read with time.time() (the same instant, several times cheaper) unless something moved
    it: a test that replaces `moto.sqs.models.unix_time_millis` with its fake clock (the fault suite, the
    precise-start tests) still governs delays and visibility in a process where this endpoint once ran."""
    clock = sqs_models.unix_time_millis
    return time.time() * 1000 if clock is _MOTOS_SQS_CLOCK else float(clock())


def _visible(message: Any) -> bool:
    return _sqs_now_ms() > message.visible_at  # type: ignore[no-any-return]


def _delayed(message: Any) -> bool:
    return _sqs_now_ms() < message.delayed_until  # type: ignore[no-any-return]


def skip_repeated_work() -> None:
    """Two things moto redoes on every request, done once or cheaper, with the same answers (measured with
    py-spy on the local endpoint during a burst; docs/benchmarks.md, "Burst"):
    - routing a request lists moto's package folder (some 180 `isdir` calls) to match the host against
      service names: the folder does not change while moto runs, so it is listed once;
    - SQS tests each message's `visible` and `delayed` on every send, receive and count, each building two
      datetimes (moto's `unix_time_millis`): the same instant from `time.time()` (moto's clock is the wall
      clock) is several times cheaper. Idempotent."""
    if getattr(moto_backends, "_tickwork_listed_once", False):
        return
    modules = tuple(moto_backends.list_of_moto_modules())
    moto_backends.list_of_moto_modules = lambda: modules  # type: ignore[assignment]
    moto_backends._tickwork_listed_once = True  # type: ignore[attr-defined]
    Message.visible = property(_visible)  # type: ignore[assignment,method-assign]
    Message.delayed = property(_delayed)  # type: ignore[assignment,method-assign]


# The DynamoDB operations whose answers are items (and counts, keys, capacity) in DynamoDB's own JSON already.
ITEM_ACTIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)
_JSON_HEADERS = {"Content-Type": "application/x-amz-json-1.0", "server": "amazon.com"}


def _binary_as_base64(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(type(value).__name__)  # anything else: moto's own serializer writes it


def serialize_item_responses_directly() -> None:
    """moto 5.2 writes every DynamoDB answer through its model-driven serializer, which walks the operation's
    shapes value by value: an `UpdateItem` that returns a 1 KB job (`ReturnValues=ALL_NEW`, the claim's
    advance) takes about 14 ms against 6.5 ms without it (measured in-process, 300 updates). An item answer
    is already DynamoDB JSON (`{"S": ...}`, `{"M": {...}}`), so it is written with `json.dumps` instead,
    binary values in base64 as the serializer writes them; anything else, errors included, still goes through
    moto's serializer. tests/integration/test_local_endpoint_speedups.py compares both, operation by
    operation. Idempotent."""
    if getattr(DynamoHandler, "_tickwork_direct", False):
        return
    serialized = DynamoHandler.serialized
    model = botocore.session.get_session().get_service_model("dynamodb")
    # What each answer may hold, as the serializer keeps it: moto adds a few members of its own (DeleteItem's
    # `ConsumedCapacityUnits`) that the operation's output shape does not have.
    members = {
        action: frozenset(getattr(model.operation_model(action).output_shape, "members", ())) for action in ITEM_ACTIONS
    }

    def direct(self: Any, action_result: Any) -> Any:
        result = action_result.result if type(action_result) is DynamoResult else None
        action = self._get_action()
        if isinstance(result, dict) and action in members:
            shape = members[action]
            try:
                answer = {k: v for k, v in result.items() if v is not None and k in shape}
                body = json.dumps(answer, default=_binary_as_base64)
            except (TypeError, ValueError):
                return serialized(self, action_result)
            return 200, dict(_JSON_HEADERS), body
        return serialized(self, action_result)

    DynamoHandler.serialized = direct  # type: ignore[method-assign]
    DynamoHandler._tickwork_moto_serialized = serialized  # type: ignore[attr-defined]  # for the comparison test
    DynamoHandler._tickwork_direct = True  # type: ignore[attr-defined]


_served: Counter[str] = Counter()
_served_lock = threading.Lock()


def request_kind(headers: Any, args: Any, method: str) -> str:
    """`service:Operation` of a request as botocore sends it: the JSON protocols name the operation in
    X-Amz-Target (DynamoDB, SQS), the query protocol in `Action` (CloudWatch), and S3 in its HTTP method; the
    service comes from the signature's credential scope (`Credential=key/date/region/service/aws4_request`)."""
    scope = (headers.get("Authorization") or "").split("Credential=", 1)[-1].split(",", 1)[0].split("/")
    service = scope[3] if len(scope) > 3 else "unknown"
    target = headers.get("X-Amz-Target") or ""
    if target:
        return f"{service}:{target.rsplit('.', 1)[-1]}"
    action = args.get("Action") if args is not None else None
    return f"{service}:{action or method}"


def count_requests() -> None:
    """Count every request moto serves by kind, and answer `REQUEST_COUNTS_PATH` with the counts. Idempotent."""
    if getattr(DomainDispatcherApplication, "_tickwork_counted", False):
        return
    dispatch = DomainDispatcherApplication.__call__

    def counted(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == REQUEST_COUNTS_PATH:
            with _served_lock:
                body = json.dumps(dict(_served)).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        headers = {
            "Authorization": environ.get("HTTP_AUTHORIZATION"),
            "X-Amz-Target": environ.get("HTTP_X_AMZ_TARGET"),
        }
        query = dict(part.split("=", 1) for part in environ.get("QUERY_STRING", "").split("&") if "=" in part)
        kind = request_kind(headers, query, environ.get("REQUEST_METHOD", ""))
        with _served_lock:
            _served[kind] += 1
        return dispatch(self, environ, start_response)

    DomainDispatcherApplication.__call__ = counted  # type: ignore[method-assign]
    DomainDispatcherApplication._tickwork_counted = True  # type: ignore[attr-defined]


def wake_long_polls(stop: threading.Event, interval: float = 0.02) -> None:
    """Wake moto's waiting long polls when a message's delay or visibility timeout ends.

    moto wakes a waiting ReceiveMessage only when a message is sent to its queue; a message whose delay
    or visibility timeout ends is seen at the poll's next once-a-second re-check. Real SQS returns it at
    once, and Tickwork's start lateness depends on it (runs are sent with DelaySeconds up to their time).
    So every `interval` this notifies each queue whose messages became visible since the last look.
    It reads moto's private structures: if they change, it stops and long polls keep moto's 1 s re-check.
    """
    last = unix_time_millis()
    while not stop.wait(interval):
        now = unix_time_millis()
        try:
            for _account, _region, backend in list(sqs_backends.iter_backends()):
                for queue in list(backend.queues.values()):  # type: ignore[attr-defined]
                    # visible once now > visible_at, and no longer delayed once now >= delayed_until
                    if any(last <= m.visible_at < now or last <= m.delayed_until <= now for m in list(queue._messages)):
                        with queue._messages_lock:
                            queue._messages_lock.notify_all()
        except AttributeError:  # pragma: no cover - moto's internals changed: keep its own re-check
            logging.getLogger(__name__).warning("cannot watch moto's queues; long polls re-check once a second")
            return
        except RuntimeError:  # a queue or message list changed while we looked: look again next time
            continue
        last = now


class InProcessMoto:
    """A ThreadedMotoServer in this process (tests; shares this process's GIL)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: Any = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> str:
        check_port_free(self.host, self.port)  # moto's server thread would hang on a taken port
        _prepare_moto()
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self.port = int(self._server.get_host_and_port()[1])
        self._stop = threading.Event()
        threading.Thread(target=wake_long_polls, args=(self._stop,), name="wake-long-polls", daemon=True).start()
        return self.endpoint_url

    def stop(self, timeout: float = 2.0) -> None:
        if hasattr(self, "_stop"):
            self._stop.set()
        server = getattr(self._server, "_server", None)
        if server is not None:
            stopper = threading.Thread(target=server.shutdown, daemon=True)
            stopper.start()
            stopper.join(timeout)


def serve(host: str, port: int, parent_pid: int | None, one_dynamodb_region: str | None = None) -> None:
    """The child's main: serve until SIGTERM, or until the parent is gone. With `one_dynamodb_region`, every region's
    DynamoDB requests reach that region's tables (tickwork_local.aws.moto_one_dynamodb: MRSC, as its users see it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    sys.setswitchinterval(0.001)  # short GIL slices: a quick request does not wait behind a slow one
    _prepare_moto()
    if one_dynamodb_region:
        share_one_dynamodb(one_dynamodb_region)
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    threading.Thread(target=wake_long_polls, args=(stopped,), name="wake-long-polls", daemon=True).start()
    sys.stdout.write(f"{READY_PREFIX}{server.get_host_and_port()[1]}\n")
    sys.stdout.flush()
    while not stopped.wait(0.5):
        if parent_pid is not None and os.getppid() != parent_pid:
            break  # the parent died (SIGKILL included): we are an orphan now
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="moto's ThreadedMotoServer for tickwork dev")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--one-dynamodb-region", default=None, help="serve every region's DynamoDB from this one's")
    args = parser.parse_args(argv)
    try:
        check_port_free(args.host, args.port)
    except PortInUse as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(2)
    serve(args.host, args.port, args.parent_pid, args.one_dynamodb_region)


if __name__ == "__main__":
    main()
