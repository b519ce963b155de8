"""End-to-end: `tickwork dev` in subprocesses on free ports, driven only over HTTP, as a user would.

Every wait here polls with a deadline; real time passes because the runtime runs in real time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.processes import Proc, free_port, wait_for  # noqa: F401 (the e2e tests import them from here)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
READY_SECONDS = 30  # the acceptance bound for `make dev` reaching ready


# ---------------------------------------------------------------------------- HTTP


class HttpError(AssertionError):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status, self.body = status, body


@dataclass
class Api:
    url: str

    def call(self, method: str, path: str, body: Any = None, expect: int | tuple[int, ...] = (200,)) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        parsed = json.loads(raw) if raw else None
        expected = (expect,) if isinstance(expect, int) else expect
        if status not in expected:
            raise HttpError(status, parsed)
        return parsed

    def get(self, path: str, **kw: Any) -> Any:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def create_job(self, **spec: Any) -> dict[str, Any]:
        spec.setdefault("type", "echo")
        return self.post("/v1/jobs", spec, expect=201)

    def runs(self, job_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = f"?limit=100{f'&cursor={cursor}' if cursor else ''}"
            page = self.get(f"/v1/jobs/{job_id}/runs{query}")
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def cancel(self, job_id: str) -> None:
        self.call("DELETE", f"/v1/jobs/{job_id}")


# ---------------------------------------------------------------------------- processes


def tickwork_dev(name: str, *args: str) -> Proc:
    return Proc.start(name, [str(BIN / "tickwork"), "dev", *args])


@dataclass
class Node:
    proc: Proc
    api: Api
    moto_url: str


def cli(node: Node, *args: str, timeout: float = 90) -> Any:
    """The `tickwork` CLI against a node, as a user in a second terminal runs it; its JSON output (not a
    terminal, so JSON)."""
    env = {**os.environ, "TICKWORK_API_URL": node.api.url}
    done = subprocess.run(
        [str(BIN / "tickwork"), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def lambda_client(node: Node) -> Any:
    """Lambda's client, at the node's endpoint (as `aws lambda invoke --endpoint-url` would be)."""
    return boto3.client(
        "lambda",
        endpoint_url=node.api.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )


def invoke_provider(node: Node, event: dict[str, Any]) -> dict[str, Any]:
    """The custom resource provider invoked with `event` as CloudFormation invokes it; its summary answer."""
    answer = lambda_client(node).invoke(
        FunctionName="tickwork-ResourceProviderFunction", Payload=json.dumps(event).encode()
    )
    assert "FunctionError" not in answer, answer["Payload"].read()
    return json.loads(answer["Payload"].read())


def start_node(name: str, *args: str, ready_seconds: float = READY_SECONDS) -> Node:
    """A `tickwork dev` on ports it picks (tests/processes.py says why), with its own moto unless `--attach`."""
    ports = ["--port", "0"] if "--attach" in args else ["--port", "0", "--moto-port", "0"]
    proc = tickwork_dev(name, *ports, "--node-name", name, *args)
    ready = proc.wait_ready(ready_seconds)
    return Node(proc, Api(ready.api_url), ready.moto_url)


@contextmanager
def running_node(name: str, *args: str) -> Iterator[Node]:
    """A node of its own moto for a module's fixture; on leaving, it must stop cleanly."""
    started = start_node(name, *args)
    try:
        yield started
    finally:
        code = started.proc.terminate()
        assert code == 0, started.proc.output()


def instant_in(seconds: float) -> str:
    """An instant this many seconds from now, as a schedule's `at` takes it."""
    instant = datetime.now(UTC) + timedelta(seconds=seconds)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    """One local runtime for a module's tests: its own moto, a 2 s tick, room for the 50-job burst."""
    with running_node("e2e", "--tick-seconds", "2", "--workers", "24") as started:
        yield started


# ---------------------------------------------------------------------------- order

# The longest files start first, so that in `make test`'s e2e phase (two files at a time) none of them starts late and
# runs alone at the end while the other worker idles. --dist loadfile hands out files in collection order only with
# --no-loadscope-reorder: by default xdist sorts them by their number of tests, which put the one-test soak last. The
# order is each file's wall time in that phase (--durations=0, 2026-11-29), longest first, but for the second: the soak
# creates hundreds of jobs at once, so the durable run, which mostly waits, starts beside it rather than the fair
# share's flood of creates. (Three or four files at a time were tried: on two cores the runtimes' creates and starts
# then fell seconds behind the times the tests hold them to.) A file not named here takes under 20 s.
LONGEST_FIRST = (
    "test_soak.py",
    "test_durable_runs_e2e.py",
    "test_speed_burst.py",
    "test_fair_share_e2e.py",
    "test_docs_examples.py",
    "test_console_workflow_actions.py",
    "test_dev_output_e2e.py",
    "test_console_calendars_and_freezes.py",
    "test_local_runtime.py",
    "test_built_stack.py",
    "test_console_audit.py",
    "test_freeze_e2e.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the other files keep their order
