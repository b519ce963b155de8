"""The local AWS endpoint: moto's ThreadedMotoServer, so boto3 talks real HTTP to it, with the two things
real AWS does that moto's server does not: each call is atomic, a long poll returns as soon as a
message becomes visible, and a standard queue whose messages carry a group serves them as an SQS fair queue
(tickwork_local.moto_atomic.play_fair_queues).

`tickwork dev` runs it in a child process (`python -m tickwork_local.motoserver`, started by
`tickwork_local.endpoint.MotoProcess`): moto holds the GIL while it serves a request, and in a process of
its own it does not compete with the handlers for it. The child ignores Ctrl-C (its parent drains first,
then stops it) and exits on its own when its parent dies, even by SIGKILL.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any

from moto.core.utils import convert_to_flask_response, unix_time_millis
from moto.moto_server.werkzeug_app import MotoRequestHandler
from moto.server import ThreadedMotoServer
from moto.sqs.models import Queue, sqs_backends

from tickwork_local.endpoint import READY_PREFIX, PortInUse, check_port_free
from tickwork_local.moto_atomic import play_fair_queues

# Set to `arrival` to serve standard queues in moto's own order (oldest first) instead of as SQS fair queues: only
# for measuring what fair queues change (benchmarks.fairness's control phase), never for use.
QUEUE_ORDER_VARIABLE = "TICKWORK_LOCAL_SQS_ORDER"


def _prepare_moto() -> None:
    serialize_requests()
    if os.environ.get(QUEUE_ORDER_VARIABLE) != "arrival":
        play_fair_queues()  # under serialize_requests' lock, like every other request's work
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # werkzeug formats a log line per request before it looks at the level: skip it.
    MotoRequestHandler.log_request = lambda self, code="-", size="-": None  # type: ignore[method-assign]


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


def serve(host: str, port: int, parent_pid: int | None) -> None:
    """The child's main: serve until SIGTERM, or until the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    sys.setswitchinterval(0.001)  # short GIL slices: a quick request does not wait behind a slow one
    _prepare_moto()
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
    args = parser.parse_args(argv)
    try:
        check_port_free(args.host, args.port)
    except PortInUse as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(2)
    serve(args.host, args.port, args.parent_pid)


if __name__ == "__main__":
    main()
