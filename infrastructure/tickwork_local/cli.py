"""`tickwork dev`: the whole scheduler on this machine, on moto, until Ctrl-C (what `make dev` runs).

Registered on the `tickwork` command by `tickwork_cli.main`. Imports stay light here: the runtime, boto3
and moto load only when the command runs.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

DEFAULT_PORT = 3000
DEFAULT_MOTO_PORT = 5000
SHUTDOWN_GRACE_SECONDS = 7.0  # in-flight runs may finish within this; the rest are released
READY_TIMEOUT_SECONDS = 25.0
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _fail(text: str, code: int = 2) -> None:
    sys.stderr.write(f"tickwork dev: {text}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def _this_command() -> str:
    """How to run this `tickwork` from another terminal: the name if PATH finds this one, else its path
    (`make dev` runs .venv/bin/tickwork without activating the venv)."""
    invoked = sys.argv[0] if sys.argv and sys.argv[0] else "tickwork"
    found = shutil.which("tickwork")
    if found and Path(found).resolve() == Path(invoked).resolve():
        return "tickwork"
    return invoked if os.sep in invoked else "tickwork"


def _wait_healthy(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/v1/health", timeout=2) as response:  # noqa: S310 - our own URL
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    return False


def dev(
    host: Annotated[str, typer.Option(help="Address the API listens on (and moto, when started here).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="API port (0: any free port).", min=0, max=65535)] = DEFAULT_PORT,
    moto_port: Annotated[
        int, typer.Option("--moto-port", help="Port of the moto server started here (0: any free port).", min=0)
    ] = DEFAULT_MOTO_PORT,
    attach: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="Use this moto (or other AWS-compatible) endpoint instead of starting one; resources are "
            "created only if missing. Several nodes attached to one endpoint share the work.",
        ),
    ] = None,
    tick_seconds: Annotated[
        int, typer.Option("--tick-seconds", help="Tick period, aligned to the wall clock.", min=1, max=840)
    ] = 60,
    workers: Annotated[
        int,
        typer.Option(
            help="Concurrent executor invocations, shared by the bands in the template's "
            "MaximumConcurrency proportions (high > normal > low), at least 2 each (Lambda's floor).",
            min=6,
            max=512,
        ),
    ] = 10,
    due_shards: Annotated[
        int,
        typer.Option(
            "--due-shards",
            help="Due-index partitions (template parameter DueShards). moto scans for every GSI query, so keep "
            "it small; nodes sharing an endpoint must agree.",
            min=1,
            max=1000,
        ),
    ] = 2,
    prefix: Annotated[str, typer.Option(help="Prefix of the local resource names.")] = "tickwork",
    log_level: Annotated[
        str, typer.Option("--log-level", help="Level of the functions' JSON logs (to stderr).")
    ] = "WARNING",
    api_keys: Annotated[
        str | None,
        typer.Option(
            "--api-keys",
            metavar="FILE",
            help="API keys file mapping keys to tenants (default: open, tenant 'default').",
        ),
    ] = None,
    node_name: Annotated[str, typer.Option("--node-name", help="Shown on every line (several nodes).")] = "",
    parameter: Annotated[
        list[str] | None,
        typer.Option(
            "--parameter",
            metavar="NAME=VALUE",
            help="Override a template parameter locally, e.g. HttpAllowlist=127.0.0.1/32; repeatable.",
        ),
    ] = None,
) -> None:
    """Run the whole scheduler locally on moto: API, tick and executors, until Ctrl-C."""
    started = time.monotonic()
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    level = log_level.upper()
    if level not in LOG_LEVELS:
        _fail(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    if api_keys is not None:
        keys = Path(api_keys).expanduser().resolve()
        if not keys.is_file():
            _fail(f"--api-keys: no file {keys}")
        api_keys = str(keys)  # the API reads it relative to nothing
    overrides: dict[str, str] = {}
    if parameter:
        from tickwork_local.template import load_template  # noqa: PLC0415 - only when overriding

        known = load_template().get("Parameters", {})
        for item in parameter:
            name, sep, value = item.partition("=")
            if not sep or name.strip() not in known:
                _fail(f"--parameter takes NAME=VALUE with a parameter of template.yaml, not {item!r}")
            overrides[name.strip()] = value
    if not attach and importlib.util.find_spec("moto") is None:
        _fail("moto is not installed: `make dev` installs it, or pip install -e '.[dev]' (or use --attach URL)")

    from tickwork_local.endpoint import MotoFailed, MotoProcess, PortInUse, check_port_free, endpoint_reachable  # noqa: PLC0415

    try:
        check_port_free(host, port)
    except PortInUse:
        _fail(f"the API port {host}:{port} is taken; choose another with --port")

    moto: MotoProcess | None = None
    if attach:
        endpoint = attach.rstrip("/")
        if not endpoint_reachable(endpoint):
            _fail(f"nothing answers at {endpoint} (--attach)")
    else:
        moto = MotoProcess(host, moto_port)
        try:
            endpoint = moto.start()
        except PortInUse:
            _fail(f"the moto port {host}:{moto_port} is taken; choose another with --moto-port, or --attach to it")
        except MotoFailed as exc:
            _fail(str(exc))

    from tickwork_local.runtime import LocalNode, NodeOptions  # noqa: PLC0415 - boto3 loads only for `dev`

    node = LocalNode(
        NodeOptions(
            endpoint_url=endpoint,
            host=host,
            port=port,
            tick_seconds=tick_seconds,
            workers=workers,
            due_shards=due_shards,
            prefix=prefix,
            attach=bool(attach),
            log_level=level,
            api_keys_file=api_keys,
            node_name=node_name,
            parameters=overrides,
        )
    )
    stop = threading.Event()
    signals: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        if stop.is_set():  # a second Ctrl-C: leave now
            os._exit(128 + signum)
        signals.append(signum)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    try:
        node.start()
    except Exception as exc:
        _say(f"tickwork dev: could not start: {type(exc).__name__}: {exc}")
        if moto is not None:
            moto.stop()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    api = node.api_url
    bands = ", ".join(f"{band} {n}" for band, n in node.concurrency.items())
    _say("Tickwork local runtime: the template's functions on moto (no AWS account, no Docker)")
    _say(f"  API      {api}/v1")
    _say(f"  Docs     {api}/docs")
    _say(f"  moto     {endpoint}{'' if attach else ' (started here; its state ends with this process)'}")
    _say(f"  tick     every {tick_seconds} s; executors: {bands} (--workers {workers})")
    _say(
        f"  Try      {_this_command()} jobs create --api-url {api} --name hello --type echo --at +10s "
        '--payload \'{"hello": "world"}\''
    )
    if not _wait_healthy(api, READY_TIMEOUT_SECONDS):
        _say(f"tickwork dev: {api}/v1/health did not answer 200; stopping")
        node.shutdown(2.0)
        if moto is not None:
            moto.stop()
        sys.stdout.flush()
        os._exit(1)
    _say(f"ready in {time.monotonic() - started:.1f} s: {api} (Ctrl-C to stop)")

    while not stop.wait(0.5):
        pass
    name = signal.Signals(signals[0]).name if signals else "signal"
    _say(f"{name}: stopping; runs in progress get {SHUTDOWN_GRACE_SECONDS:.0f} s to finish")
    report = node.shutdown(SHUTDOWN_GRACE_SECONDS)
    if report["released"]:
        _say(f"released {report['released']} unfinished messages back to their queues")
    if moto is not None:
        moto.stop()
    _say("stopped")
    sys.stdout.flush()
    sys.stderr.flush()
    # Handler threads still running (a job sleeping past the grace) must not hold the exit.
    os._exit(0)


def register(app: typer.Typer) -> None:
    app.command("dev")(dev)
