"""Two or three "regions" on one machine (`tickwork dev --regions R1,R2[,R3] --region-mode strong|eventual`), so a
region's failure is exercised end to end (docs/local.md, "Several regions").

Each region runs the same stack: its nodes (`tickwork dev --attach`, in processes of their own, each with its tick,
pollers and API on its own port) with `AWS_REGION` set to the region, so the product reads where it runs, and the
regions' endpoints, where its API reads a result another region's bucket holds; its own queues, event bus, metrics and
results bucket, named for its region as deployed (moto keeps every region's apart). The table differs by mode:
- strong: one moto server whose DynamoDB is the same for every region (tickwork_local.aws.moto_one_dynamodb), which
  is exactly the consistency a multi-Region strong consistency (MRSC) global table promises;
- eventual: a moto server per region, each with its own table (and queues and bucket), and the local MREC replicator
  (tickwork_local.aws.replicator) between the tables, with a configurable lag; its latencies go into each region's
  CloudWatch as DynamoDB's ReplicationLatency (tickwork_local.aws.replication_latency), where the nodes' health
  endpoint reads them as on AWS. Each node knows every region's endpoint (REGION_ENDPOINTS_ENV), so a failover's
  replication probe reads the old active region's table and CloudWatch as on AWS. The nodes run as RegionMode eventual
  (the fence reads the region-role item), and the first region is made active under epoch 1 before they start, as
  the runbook's first failover does deployed (docs/regions.md, "Runbook"): its table holds the item, which reaches
  the others by replication.

A small control API on loopback says where everything is and kills a region: `GET /regions`, and `POST
/regions/REGION/kill` SIGKILLs every node of that region (its endpoint and table stay, as a region's outage of the
compute alone would leave them), so a drill can kill a region mid-load.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

import boto3
from tickwork.aws.clients import AwsClients
from tickwork.model.regions import FailoverPlan, RegionMode, RegionRoles, plan_failover
from tickwork.store.conditional import Table
from tickwork.store.regions import RegionRoleRecords

from tickwork_local.aws.endpoint import MotoProcess
from tickwork_local.aws.provision import TABLE_ID, provision
from tickwork_local.aws.replication_latency import ReplicationLatencyPublisher
from tickwork_local.aws.replicator import Replica, Replicator
from tickwork_local.runtime.node import FAKE_CREDENTIALS, REGION_ENDPOINTS_ENV
from tickwork_local.stack.template import load_template

REGION_MODES = ("strong", "eventual")
REGION_NAME = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")  # an AWS region's name: what AWS_REGION holds deployed
READY_LINE = re.compile(r"^ready in [0-9.]+ s: (?P<url>\S+)")
NODE_READY_SECONDS = 60.0
REGIONS_PATH = "/regions"


def parse_regions(value: str) -> list[str]:
    """`us-east-1,us-west-2[,eu-west-1]`: two or three distinct AWS region names (MRSC's region sets are three)."""
    regions = [part.strip() for part in value.split(",") if part.strip()]
    bad = [r for r in regions if not REGION_NAME.match(r)]
    if bad:
        raise ValueError(f"--regions takes AWS region names (us-east-1,us-west-2), not {', '.join(bad)}")
    if not 2 <= len(regions) <= 3 or len(set(regions)) != len(regions):
        raise ValueError("--regions takes two or three different regions")
    return regions


def activate_first_region(records: RegionRoleRecords, regions: list[str], now: datetime) -> RegionRoles:
    """eventual: the first region made active under epoch 1, in the replica `records` reads (the first region's; the
    others get the item replicated), as the runbook's first failover does deployed. Refused if a region is active."""
    plan = plan_failover(RegionMode.EVENTUAL, None, regions[0], regions, caught_up=None, force=False, now=now)
    assert isinstance(plan, FailoverPlan)  # the first activation: nothing to wait for or refuse
    if not records.fail_over(plan):
        raise RuntimeError(f"a region is active already: {records.roles()}")
    return plan.roles


@dataclass
class RegionsOptions:
    regions: list[str]
    mode: str
    host: str = "127.0.0.1"
    port: int = 0  # the first node's API port, the next nodes' follow; 0: any free port for each
    moto_port: int = 0  # likewise, the endpoints' (eventual: one per region)
    nodes_per_region: int = 1
    replication_lag_seconds: float = 1.0
    control_port: int = 0
    prefix: str = "tickwork"
    parameters: dict[str, str] = field(default_factory=dict)  # the template parameters the nodes use
    node_args: list[str] = field(default_factory=list)  # more `tickwork dev` options for every node


@dataclass
class RegionNode:
    region: str
    name: str
    process: subprocess.Popen[str]
    api_url: str = ""
    ready: threading.Event = field(default_factory=threading.Event)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


class LocalRegions:
    """The regions' endpoints, replicator, nodes and control API: `start`, then `kill_region` and `stop`."""

    def __init__(self, options: RegionsOptions, *, out: TextIO | None = None) -> None:
        if options.mode not in REGION_MODES:
            raise ValueError(f"--region-mode is strong or eventual, not {options.mode!r}")
        self.options = options
        self.out = out or sys.stdout
        self.endpoints: dict[str, MotoProcess] = {}  # by region (strong: one shared)
        self.replicator: Replicator | None = None
        self.nodes: list[RegionNode] = []
        self.kills: list[dict[str, Any]] = []
        self.control: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ start

    def endpoint_url(self, region: str) -> str:
        return self.endpoints[region].endpoint_url

    def _client(self, region: str, service: str) -> Any:
        session = boto3.session.Session(
            region_name=region,
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        return AwsClients(session=session, endpoint_url=self.endpoint_url(region)).client(service)

    def _start_endpoints(self) -> None:
        opts = self.options
        if opts.mode == "strong":
            shared = MotoProcess(opts.host, opts.moto_port, one_dynamodb_region=opts.regions[0])
            shared.start()
            self.endpoints = dict.fromkeys(opts.regions, shared)
            return
        self.endpoints = {
            region: MotoProcess(opts.host, opts.moto_port + index if opts.moto_port else 0)
            for index, region in enumerate(opts.regions)
        }
        failed: list[BaseException] = []

        def start(endpoint: MotoProcess) -> None:
            try:
                endpoint.start()
            except Exception as exc:  # said below, after every start has ended
                failed.append(exc)

        starting = [threading.Thread(target=start, args=(e,)) for e in self.endpoints.values()]  # at once: moto's
        for thread in starting:  # import is most of its start
            thread.start()
        for thread in starting:
            thread.join()
        if failed:
            raise failed[0]

    def _provision(self) -> None:
        """Each region's table, queues and buckets, before its nodes start (they attach), so the replicator streams
        the table from its first write."""
        template = load_template()
        for region in self.options.regions:
            provision(
                template,
                dynamodb=self._client(region, "dynamodb"),
                sqs=self._client(region, "sqs"),
                s3=self._client(region, "s3"),
                prefix=self.options.prefix,
                if_missing=True,
                parameters=self._node_parameters(),
            )

    def _start_replicator(self) -> None:
        table = f"{self.options.prefix}-{TABLE_ID}"
        replicas = [
            Replica(region, table, self._client(region, "dynamodb"), self._client(region, "dynamodbstreams"))
            for region in self.options.regions
        ]
        self.replicator = Replicator(replicas, lag_seconds=self.options.replication_lag_seconds)
        self.replicator.enable_streams()
        cloudwatch_of = {region: self._client(region, "cloudwatch") for region in self.options.regions}
        publisher = ReplicationLatencyPublisher(self.replicator.take_latencies, cloudwatch_of, table=table)
        self.replicator.start(after_pump=publisher.publish_every())

    def _node_parameters(self) -> dict[str, str]:
        """The template parameters a node runs with: those of a stack of the global table, so its functions read
        REGION_MODE and the regions (the table keeps its local name), and its results bucket is named for its region
        (docs/regions.md, "Results")."""
        return {
            **self.options.parameters,
            "RegionMode": self.options.mode,
            "GlobalTableName": f"{self.options.prefix}-{TABLE_ID}",
            "GlobalTableRegions": ",".join(self.options.regions),
        }

    def _start_node(self, region: str, index: int, port: int) -> RegionNode:
        name = region if self.options.nodes_per_region == 1 else f"{region}/{index + 1}"
        command = [
            sys.executable,
            "-c",
            "from tickwork_cli.main import app; app()",
            "dev",
            "--attach",
            self.endpoint_url(region),
            "--host",
            self.options.host,
            "--port",
            str(port),
            "--prefix",
            self.options.prefix,
            "--node-name",
            name,
            "--parent-pid",
            str(os.getpid()),
            *[
                arg
                for name_value in sorted(self._node_parameters().items())
                for arg in ("--parameter", "=".join(name_value))
            ],
            *self.options.node_args,
        ]
        endpoints = ",".join(f"{r}={self.endpoint_url(r)}" for r in self.options.regions)
        env = {
            **os.environ,
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            REGION_ENDPOINTS_ENV: endpoints,
            **FAKE_CREDENTIALS,
        }
        env.pop("AWS_ENDPOINT_URL", None)
        process = subprocess.Popen(  # noqa: S603 - this interpreter, our own command
            command, stdout=subprocess.PIPE, stderr=None, text=True, env=env, start_new_session=True
        )
        node = RegionNode(region, name, process)
        threading.Thread(target=self._relay, args=(node,), name=f"relay-{name}", daemon=True).start()
        return node

    def _relay(self, node: RegionNode) -> None:
        """The node's lines to this process's stdout, and its API's URL from its `ready` line."""
        assert node.process.stdout is not None
        for line in node.process.stdout:
            ready = READY_LINE.match(line)
            if ready and not node.ready.is_set():
                node.api_url = ready.group("url")
                node.ready.set()
            self._say(f"[{node.name}] {line.rstrip()}")

    def _say(self, text: str) -> None:
        with self._lock:
            self.out.write(text + "\n")
            self.out.flush()

    def start(self) -> None:
        opts = self.options
        self._start_endpoints()
        self._provision()
        if opts.mode == "eventual":
            self._start_replicator()
            table = Table(self._client(opts.regions[0], "dynamodb"), f"{opts.prefix}-{TABLE_ID}")
            activate_first_region(RegionRoleRecords(table), opts.regions, datetime.now(UTC))
        count = 0
        for region in opts.regions:
            for index in range(opts.nodes_per_region):
                self.nodes.append(self._start_node(region, index, opts.port + count if opts.port else 0))
                count += 1
        deadline = time.monotonic() + NODE_READY_SECONDS
        for node in self.nodes:
            if not node.ready.wait(max(0.0, deadline - time.monotonic())):
                raise RuntimeError(f"the node {node.name} did not become ready")
        self._start_control()

    # ------------------------------------------------------------ the drill's controls

    def kill_region(self, region: str) -> dict[str, Any]:
        """SIGKILL every node of `region` (no grace, no cleanup: the region is gone); when, and which processes."""
        if region not in self.options.regions:
            raise KeyError(region)
        killed = []
        for node in self.nodes:
            if node.region == region and node.alive:
                os.killpg(node.process.pid, signal.SIGKILL)  # the node's own session: it and what it started
                killed.append(node.process.pid)
        for node in self.nodes:
            if node.region == region:
                node.process.wait(10)
        record = {"region": region, "killed": killed, "at": datetime.now(UTC).isoformat()}
        self.kills.append(record)
        return record

    def status(self) -> dict[str, Any]:
        regions = {
            region: {
                "endpoint": self.endpoint_url(region),
                "nodes": [
                    {"name": n.name, "api_url": n.api_url, "pid": n.process.pid, "alive": n.alive}
                    for n in self.nodes
                    if n.region == region
                ],
            }
            for region in self.options.regions
        }
        replication = self.replicator.report() if self.replicator is not None else None
        return {"mode": self.options.mode, "regions": regions, "replication": replication, "kills": self.kills}

    def _start_control(self) -> None:
        regions = self

        class Control(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == REGIONS_PATH:
                    self._answer(200, regions.status())
                else:
                    self._answer(404, {"message": f"GET {REGIONS_PATH}, or POST {REGIONS_PATH}/REGION/kill"})

            def do_POST(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) != 3 or f"/{parts[0]}" != REGIONS_PATH or parts[2] != "kill":
                    self._answer(404, {"message": f"POST {REGIONS_PATH}/REGION/kill"})
                    return
                try:
                    self._answer(200, regions.kill_region(parts[1]))
                except KeyError:
                    self._answer(404, {"message": f"no region {parts[1]}: {', '.join(regions.options.regions)}"})

            def log_message(self, *_: Any) -> None:
                pass

        self.control = ThreadingHTTPServer((self.options.host, self.options.control_port), Control)
        threading.Thread(target=self.control.serve_forever, name="regions-control", daemon=True).start()

    @property
    def control_url(self) -> str:
        assert self.control is not None
        return f"http://{self.options.host}:{self.control.server_address[1]}{REGIONS_PATH}"

    # ------------------------------------------------------------ stop

    def stop(self, grace_seconds: float = 10.0) -> None:
        """Ask every node to stop (SIGTERM: its runs in progress get their grace), then the replicator and endpoints."""
        for node in self.nodes:
            if node.alive:
                node.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        for node in self.nodes:
            try:
                node.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(node.process.pid, signal.SIGKILL)
        if self.control is not None:
            self.control.shutdown()
        if self.replicator is not None:
            self.replicator.stop()
        for endpoint in {id(e): e for e in self.endpoints.values()}.values():
            endpoint.stop()
