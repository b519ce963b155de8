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
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from tickwork_local.aws.endpoint import MotoProcess
    from tickwork_local.identity.idp import LocalIdp
    from tickwork_local.runtime.node import LocalNode

DEFAULT_PORT = 3000
DEFAULT_MOTO_PORT = 5000
SHUTDOWN_GRACE_SECONDS = 7.0  # in-flight runs may finish within this; the rest are released
READY_TIMEOUT_SECONDS = 25.0
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _fail(text: str, code: int = 2) -> NoReturn:
    sys.stderr.write(f"tickwork dev: {text}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def _leave(code: int, moto: MotoProcess | None, last_line: str | None = None) -> NoReturn:
    """Stop the moto started here (if any), say the last line, and exit now: handler threads still running
    (a job sleeping past the grace) must not hold the exit."""
    if moto is not None:
        moto.stop()
    if last_line is not None:
        _say(last_line)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _this_command() -> str:
    """How to run this `tickwork` from another terminal: the name if PATH finds this one, else its path
    (`make dev` runs .venv/bin/tickwork without activating the venv)."""
    invoked = sys.argv[0] if sys.argv and sys.argv[0] else "tickwork"
    found = shutil.which("tickwork")
    if found and Path(found).resolve() == Path(invoked).resolve():
        return "tickwork"
    return invoked if os.sep in invoked else "tickwork"


def _wait_healthy(url: str, timeout: float, token: str | None = None) -> bool:
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(f"{url}/v1/health", headers=headers)  # noqa: S310 - our own URL
            with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310 - our own URL
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    return False


# ---------------------------------------------------------------- checking the options


def _log_level(value: str | None, verbose: bool) -> str:
    """--log-level if given; else INFO with --verbose, WARNING without (the run lines say what happens)."""
    if value is None:
        return "INFO" if verbose else "WARNING"
    level = value.upper()
    if level not in LOG_LEVELS:
        _fail(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    return level


def _keys_file(value: str | None) -> str | None:
    """The keys file as an absolute path: the API reads it relative to nothing."""
    if value is None:
        return None
    keys = Path(value).expanduser().resolve()
    if not keys.is_file():
        _fail(f"--api-keys: no file {keys}")
    return str(keys)


def _parameter_overrides(items: list[str] | None) -> dict[str, str]:
    """`--parameter NAME=VALUE` pairs, each naming a parameter of template.yaml."""
    if not items:
        return {}
    from tickwork_local.stack.template import load_template  # noqa: PLC0415 - only when overriding

    known = load_template().get("Parameters", {})
    overrides: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in known:
            _fail(f"--parameter takes NAME=VALUE with a parameter of template.yaml, not {item!r}")
        overrides[name.strip()] = value
    return overrides


def _job_types(modules: str | None, overrides: dict[str, str]) -> dict[str, str]:
    """`--job-types` is the template parameter JobTypeModules (so the functions import the modules as deployed)."""
    if modules is None:
        return overrides
    if "JobTypeModules" in overrides:
        _fail("give the job type modules once: --job-types or --parameter JobTypeModules=..., not both")
    return {**overrides, "JobTypeModules": modules}


def _job_types_paths(values: list[str] | None) -> list[str]:
    """The `--job-types-path` folders, absolute: where the functions find the job type modules (as in a layer)."""
    paths = []
    for value in values or []:
        folder = Path(value).expanduser().resolve()
        if not folder.is_dir():
            _fail(f"--job-types-path: no folder {folder}")
        paths.append(str(folder))
    return paths


def _idp_users(values: list[str] | None, overrides: dict[str, str]) -> list[Any]:
    """The local IdP's test users: those of --idp-user, or alice (tenant acme), bob (globex) and ada (the admin, of
    ops), their groups named as the template's JwtTenantPrefix and JwtAdminGroup say."""
    from tickwork_local.identity.idp import default_users, parse_user  # noqa: PLC0415
    from tickwork_local.stack.template import load_template  # noqa: PLC0415

    if not values:
        parameters = load_template()["Parameters"]

        def value(name: str) -> str:
            return overrides.get(name, str(parameters[name]["Default"]))

        return default_users(value("JwtTenantPrefix"), value("JwtAdminGroup"))
    try:
        return [parse_user(item) for item in values]
    except ValueError as exc:
        _fail(str(exc))


def _start_idp(host: str, port: int, users: list[Any], overrides: dict[str, str]) -> tuple[LocalIdp, dict[str, str]]:
    """The local IdP, started; the template's JwtIssuer and JwtAudience point at it (the API is then TokenApi)."""
    from tickwork_local.aws.endpoint import PortInUse, check_port_free  # noqa: PLC0415
    from tickwork_local.identity.idp import CLIENT_ID, LocalIdp  # noqa: PLC0415

    taken = {"JwtIssuer", "JwtAudience", "CreateUserPool"} & overrides.keys()
    if taken:
        _fail(f"--idp is the issuer: give no --parameter {', '.join(sorted(taken))}")
    if port:
        try:
            check_port_free(host, port)
        except PortInUse:
            _fail(f"the IdP port {host}:{port} is taken; choose another with --idp-port")
    idp = LocalIdp(users, host=host, port=port)
    idp.start()
    return idp, {**overrides, "JwtIssuer": idp.url, "JwtAudience": CLIENT_ID}


# ---------------------------------------------------------------- the steps of `tickwork dev`


def _start_aws_stand_in(host: str, port: int, moto_port: int, attach: str | None) -> tuple[MotoProcess | None, str]:
    """The AWS endpoint to use: the one given with --attach, or a moto server started here (returned, to
    stop at the end). The API's port is checked first, so a taken port fails before anything starts."""
    from tickwork_local.aws.endpoint import MotoFailed, MotoProcess, PortInUse, check_port_free, endpoint_reachable  # noqa: PLC0415

    try:
        check_port_free(host, port)
    except PortInUse:
        _fail(f"the API port {host}:{port} is taken; choose another with --port")
    if attach:
        endpoint = attach.rstrip("/")
        if not endpoint_reachable(endpoint):
            _fail(f"nothing answers at {endpoint} (--attach)")
        return None, endpoint
    moto = MotoProcess(host, moto_port)
    try:
        return moto, moto.start()
    except PortInUse:
        _fail(f"the moto port {host}:{moto_port} is taken; choose another with --moto-port, or --attach to it")
    except MotoFailed as exc:
        _fail(str(exc))


class _StopRequest:
    """Set by the first SIGINT or SIGTERM; a second one leaves at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signals: list[int] = []
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.event.is_set():  # a second Ctrl-C: leave now
            os._exit(128 + signum)
        self.signals.append(signum)
        self.event.set()

    def wait(self) -> str:
        """Block until asked to stop; the signal's name."""
        while not self.event.wait(0.5):
            pass
        return signal.Signals(self.signals[0]).name if self.signals else "signal"


def _start_node(node: LocalNode, moto: MotoProcess | None) -> None:
    """Provision the template's resources and start the API, the tick and the executors; exit 1 if that fails."""
    try:
        node.start()
    except Exception as exc:
        _say(f"tickwork dev: could not start: {type(exc).__name__}: {exc}")
        _leave(1, moto)


def _print_banner(
    node: LocalNode, endpoint: str, attached: bool, tick_seconds: int, workers: int, idp: LocalIdp | None
) -> None:
    api = node.api_url
    bands = ", ".join(f"{band} {n}" for band, n in node.concurrency.items())
    _say("Tickwork local runtime: the template's functions on moto (no AWS account, no Docker)")
    _say(f"  API      {api}/v1")
    _say(f"  Docs     {api}/docs")
    _say(f"  Console  {api}/console/")
    if idp is not None:
        users = ", ".join(f"{u.name} ({' '.join(u.groups) or 'no groups'})" for u in idp.issuer.users)
        _say(f"  IdP      {idp.url} (sign in as: {users}); the API takes its bearer tokens only")
    _say(f"  moto     {endpoint}{'' if attached else ' (started here; its state ends with this process)'}")
    _say(f"  tick     every {tick_seconds} s; executors: {bands} (--workers {workers})")
    modules = node.parameters().get("JobTypeModules")
    if modules:
        from tickwork.jobtypes import Isolation, registry  # noqa: PLC0415 - the runtime has imported it by now

        # Each with where its handler runs, when not in the executor (docs/security.md, "Isolation of job code").
        types = [
            name if registry.get(name).isolation is Isolation.INLINE else f"{name} (isolation function)"
            for name in registry.names()
        ]
        _say(f"  types    {', '.join(types)} (JobTypeModules={modules})")
    _say(
        f"  Try      {_this_command()} jobs create --api-url {api} --name hello --type echo --at +10s "
        '--payload \'{"hello": "world"}\''
    )


def _wait_ready(node: LocalNode, moto: MotoProcess | None, started: float, idp: LocalIdp | None) -> None:
    """Say `ready in N s` once the API answers its health check; stop everything and exit 1 if it never does."""
    api = node.api_url
    # With the IdP, the API takes its tokens only (as TokenApi): the check signs in as its first user.
    token = idp.issuer.tokens_for(idp.issuer.users[0])["access_token"] if idp and idp.issuer.users else None
    if not _wait_healthy(api, READY_TIMEOUT_SECONDS, token):
        _say(f"tickwork dev: {api}/v1/health did not answer 200; stopping")
        node.shutdown(2.0, endpoint_stops_too=moto is not None)
        _leave(1, moto)
    _say(f"ready in {time.monotonic() - started:.1f} s: {api} (Ctrl-C to stop)")


def _serve_until_stopped(stop: _StopRequest, node: LocalNode, moto: MotoProcess | None) -> NoReturn:
    """Run until a signal; give runs in progress the grace period, release the rest, and exit 0."""
    name = stop.wait()
    _say(f"{name}: stopping; runs in progress get {SHUTDOWN_GRACE_SECONDS:.0f} s to finish")
    report = node.shutdown(SHUTDOWN_GRACE_SECONDS, endpoint_stops_too=moto is not None)
    if report["released"]:
        _say(f"released {report['released']} unfinished messages back to their queues")
    _leave(0, moto, "stopped")


# ---------------------------------------------------------------- the command

Host = Annotated[str, typer.Option(help="Address the API listens on (and moto, when started here).")]
Port = Annotated[int, typer.Option(help="API port (0: any free port).", min=0, max=65535)]
AcceptHost = Annotated[
    list[str] | None,
    typer.Option(
        "--accept-host",
        metavar="NAME",
        help="Host name the API answers for besides localhost, 127.0.0.1, [::1] and --host (which it needs when "
        "--host is 0.0.0.0); repeatable.",
    ),
]
MotoPort = Annotated[
    int, typer.Option("--moto-port", help="Port of the moto server started here (0: any free port).", min=0)
]
Attach = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="Use this moto (or other AWS-compatible) endpoint instead of starting one; resources are "
        "created only if missing. Several nodes attached to one endpoint share the work.",
    ),
]
TickSeconds = Annotated[
    int, typer.Option("--tick-seconds", help="Tick period, aligned to the wall clock.", min=1, max=840)
]
Workers = Annotated[
    int,
    typer.Option(
        help="Concurrent executor invocations, shared by the bands in the template's "
        "MaximumConcurrency proportions (high > normal > low), at least 2 each (Lambda's floor).",
        min=6,
        max=512,
    ),
]
DueShards = Annotated[
    int,
    typer.Option(
        "--due-shards",
        help="Due-index partitions (template parameter DueShards). moto scans for every GSI query, so keep "
        "it small; nodes sharing an endpoint must agree.",
        min=1,
        max=1000,
    ),
]
Prefix = Annotated[str, typer.Option(help="Prefix of the local resource names.")]
LogLevel = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        metavar="LEVEL",
        help="Level of the functions' JSON logs on stderr, DEBUG, INFO, WARNING or ERROR (default WARNING, INFO "
        "with --verbose); the run lines "
        "are on stdout, so `2>functions.log` keeps the JSON in a file.",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help="Print the functions' JSON logs from INFO up (the level deployed), besides the run lines.",
    ),
]
ApiKeys = Annotated[
    str | None,
    typer.Option(
        "--api-keys",
        metavar="FILE",
        help='API keys file: a JSON object mapping each key to a tenant ({"key": "tenant"}, or {"key": {"tenant": '
        '"ops", "admin": true}} for an admin). Without it the API is open, as the tenant default.',
    ),
]
NodeName = Annotated[str, typer.Option("--node-name", help="Shown on every line (several nodes).")]
Parameter = Annotated[
    list[str] | None,
    typer.Option(
        "--parameter",
        metavar="NAME=VALUE",
        help="Override a template parameter locally, e.g. HttpAllowlist=127.0.0.1/32; repeatable.",
    ),
]

InjectAwsErrors = Annotated[
    float,
    typer.Option(
        "--inject-aws-errors",
        metavar="RATE",
        help="Fail this share of the functions' AWS requests on purpose (throttles, 5xx, connect timeouts), "
        "e.g. 0.02; the SDK's retries and the scheduler's recovery must ride over them.",
        min=0.0,
        max=1.0,
    ),
]
FaultSeed = Annotated[int, typer.Option("--fault-seed", help="Seed of the injected errors' random stream.")]
Built = Annotated[
    str | None,
    typer.Option(
        "--built",
        metavar="DIR",
        help="Run the functions as deployed: from the build in DIR (`tickwork build`), each in processes of the "
        "template's Python with only its code and layers on sys.path, fed through the Lambda Runtime API.",
    ),
]
BuildOut = Annotated[str, typer.Option("--out", metavar="DIR", help="Where the build goes.")]
JobTypes = Annotated[
    str | None,
    typer.Option(
        "--job-types",
        metavar="MODULE[,MODULE]",
        help="Import these modules of your own job types in every function, as the template parameter "
        "JobTypeModules does when deployed (docs/job-types.md).",
    ),
]
Idp = Annotated[
    bool,
    typer.Option(
        "--idp",
        help="Play an OIDC issuer on --host with test users (tickwork_local.identity.idp), and be the stack's token API: "
        "the console signs in there (authorization code with PKCE), the API takes its bearer tokens only.",
    ),
]
IdpPort = Annotated[int, typer.Option("--idp-port", help="The local IdP's port (0: any free port).", min=0, max=65535)]
IdpUser = Annotated[
    list[str] | None,
    typer.Option(
        "--idp-user",
        metavar="NAME=GROUP[,GROUP]",
        help="A test user of the local IdP and its groups claim, e.g. carol=tickwork-tenant-acme; repeatable. "
        "Without it: alice (tenant acme), bob (globex) and ada (the admin, of tenant ops).",
    ),
]
JobTypesPath = Annotated[
    list[str] | None,
    typer.Option(
        "--job-types-path",
        metavar="DIR",
        help="A folder the --job-types modules are imported from (the contents of their layer); repeatable. "
        "Without it they come from PYTHONPATH or this environment.",
    ),
]


Regions = Annotated[
    str | None,
    typer.Option(
        "--regions",
        metavar="REGION,REGION[,REGION]",
        help="Run two or three regions on this machine, e.g. us-east-1,us-west-2: each its own nodes (API ports from "
        '--port on), with AWS_REGION set; the table as --region-mode says (docs/local.md, "Several regions").',
    ),
]
RegionMode = Annotated[
    str,
    typer.Option(
        "--region-mode",
        help="With --regions: strong (one table every region shares, as MRSC) or eventual (a table per region, "
        "replicated with --replication-lag, last writer wins, as MREC).",
    ),
]
ReplicationLag = Annotated[
    float,
    typer.Option("--replication-lag", metavar="SECONDS", help="eventual: the replication lag between regions.", min=0),
]
NodesPerRegion = Annotated[int, typer.Option("--nodes-per-region", help="With --regions: nodes in each.", min=1, max=4)]
ControlPort = Annotated[
    int,
    typer.Option(
        "--control-port",
        help="With --regions: port of the control API (GET /regions; POST /regions/REGION/kill kills a region's "
        "nodes); 0: any free port.",
        min=0,
        max=65535,
    ),
]

ParentPid = Annotated[
    int | None,
    typer.Option(
        "--parent-pid",
        metavar="PID",
        help="Exit when this process is gone: --regions starts its nodes with it, so none runs on without it.",
    ),
]


def _exit_with_parent(parent_pid: int) -> None:
    """A --regions node runs in a session of its own (Ctrl-C reaches its parent, which stops it): if that parent
    dies without stopping it (SIGKILL), the node must not run on alone."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def dev(
    host: Host = "127.0.0.1",
    port: Port = DEFAULT_PORT,
    accept_host: AcceptHost = None,
    moto_port: MotoPort = DEFAULT_MOTO_PORT,
    attach: Attach = None,
    tick_seconds: TickSeconds = 60,
    workers: Workers = 10,
    due_shards: DueShards = 2,
    prefix: Prefix = "tickwork",
    log_level: LogLevel = None,
    verbose: Verbose = False,
    api_keys: ApiKeys = None,
    node_name: NodeName = "",
    parameter: Parameter = None,
    inject_aws_errors: InjectAwsErrors = 0.0,
    fault_seed: FaultSeed = 0,
    built: Built = None,
    job_types: JobTypes = None,
    job_types_path: JobTypesPath = None,
    idp: Idp = False,
    idp_port: IdpPort = 0,
    idp_user: IdpUser = None,
    regions: Regions = None,
    region_mode: RegionMode = "strong",
    replication_lag: ReplicationLag = 1.0,
    nodes_per_region: NodesPerRegion = 1,
    control_port: ControlPort = 0,
    parent_pid: ParentPid = None,
) -> None:
    """Run the whole scheduler locally on moto: API, tick and executors, until Ctrl-C."""
    started = time.monotonic()
    if parent_pid is not None:
        _exit_with_parent(parent_pid)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    level, keys_file, overrides = _log_level(log_level, verbose), _keys_file(api_keys), _parameter_overrides(parameter)
    overrides, module_paths = _job_types(job_types, overrides), _job_types_paths(job_types_path)
    if regions is not None:
        if attach or built or idp:
            _fail("--regions starts its own endpoints and in-process nodes: no --attach, --built or --idp with it")
        node_args = ["--tick-seconds", str(tick_seconds), "--workers", str(workers), "--log-level", level]
        node_args += ["--inject-aws-errors", str(inject_aws_errors), "--fault-seed", str(fault_seed)]
        node_args += ["--api-keys", keys_file] if keys_file else []
        node_args += [arg for path in module_paths for arg in ("--job-types-path", path)]
        _dev_regions(
            regions,
            region_mode,
            host=host,
            ports=(port, moto_port, control_port),
            nodes_per_region=nodes_per_region,
            replication_lag=replication_lag,
            prefix=prefix,
            parameters={"DueShards": str(due_shards), **overrides},
            node_args=node_args,
            started=started,
        )
    if not attach and importlib.util.find_spec("moto") is None:
        _fail("moto is not installed: `make dev` installs it, or pip install 'tickwork[dev]' (or use --attach URL)")
    if idp and keys_file:
        _fail("--idp and --api-keys exclude each other: with the IdP, callers are its tokens' users")
    local_idp = None
    if idp:
        local_idp, overrides = _start_idp(host, idp_port, _idp_users(idp_user, overrides), overrides)
    moto, endpoint = _start_aws_stand_in(host, port, moto_port, attach)

    from tickwork_local.runtime.node import LocalNode, NodeOptions  # noqa: PLC0415 - boto3 loads only for `dev`

    node = LocalNode(
        NodeOptions(
            endpoint_url=endpoint,
            host=host,
            port=port,
            accept_hosts=tuple(accept_host or ()),
            tick_seconds=tick_seconds,
            workers=workers,
            due_shards=due_shards,
            prefix=prefix,
            attach=bool(attach),
            log_level=level,
            api_keys_file=keys_file,
            node_name=node_name,
            parameters=overrides,
            aws_error_rate=inject_aws_errors,
            aws_error_seed=fault_seed,
            built=built,
            job_type_paths=module_paths,
            token_api=local_idp is not None,
        )
    )
    stop = _StopRequest()
    _start_node(node, moto)
    if local_idp is not None:  # the console's redirect URIs, now that the API's port is known
        port_part = node.api_url.rsplit(":", 1)[1]
        local_idp.issuer.redirect_uris = {
            f"{node.api_url}/console/",
            f"http://localhost:{port_part}/console/",
            f"http://127.0.0.1:{port_part}/console/",
        }
    _print_banner(node, endpoint, bool(attach), tick_seconds, workers, local_idp)
    _wait_ready(node, moto, started, local_idp)
    _serve_until_stopped(stop, node, moto)


def _dev_regions(
    regions: str,
    mode: str,
    *,
    host: str,
    ports: tuple[int, int, int],
    nodes_per_region: int,
    replication_lag: float,
    prefix: str,
    parameters: dict[str, str],
    node_args: list[str],
    started: float,
) -> NoReturn:
    """`tickwork dev --regions`: each region's nodes, their endpoints (and the replicator), until Ctrl-C."""
    from tickwork_local.runtime.regions import LocalRegions, RegionsOptions, parse_regions  # noqa: PLC0415

    port, moto_port, control_port = ports
    try:
        # In RegionsOptions' field order: regions, mode, host, then the ports, nodes, lag, control port and the rest.
        options = RegionsOptions(
            parse_regions(regions), mode, host, port, moto_port, nodes_per_region, replication_lag, control_port
        )
        options.prefix, options.parameters, options.node_args = prefix, parameters, node_args
        local = LocalRegions(options)
    except ValueError as exc:
        _fail(str(exc))
    stop = _StopRequest()
    try:
        local.start()
    except Exception as exc:
        _say(f"tickwork dev: the regions could not start: {type(exc).__name__}: {exc}")
        local.stop(2.0)
        _leave(1, None)
    table = (
        "one table, every region's (MRSC)"
        if mode == "strong"
        else f"a table each, replicated after {replication_lag:g} s"
    )
    _say(f"Tickwork local regions ({mode}: {table})")
    for region, status in local.status()["regions"].items():
        urls = ", ".join(f"{node['api_url']}/v1" for node in status["nodes"])
        _say(f"  {region:<14} API {urls}  (moto {status['endpoint']})")
    _say(f"  Control  {local.control_url} (POST {local.control_url}/REGION/kill kills every node of a region)")
    _say(f"regions ready in {time.monotonic() - started:.1f} s (Ctrl-C to stop)")
    name = stop.wait()
    _say(f"{name}: stopping every region's nodes")
    local.stop(SHUTDOWN_GRACE_SECONDS + 3)
    _leave(0, None, "stopped")


def build(out: BuildOut = ".build/local") -> None:
    """Build the template's functions and layer as `sam build` does, for this machine (for `dev --built`)."""
    from tickwork_local.stack.build import BuildError  # noqa: PLC0415
    from tickwork_local.stack.build import build as build_stack  # noqa: PLC0415

    try:
        stack = build_stack(out=Path(out))
    except BuildError as exc:
        _fail(str(exc))
    _say(f"built {stack.root} with {stack.python}: tickwork dev --built {stack.root}")


def register(app: typer.Typer) -> None:
    from tickwork_local.aws.local_secrets import secrets_app  # noqa: PLC0415 - typer only; boto3 when it runs

    app.command("dev")(dev)
    app.command("build")(build)
    app.add_typer(secrets_app, name="secrets")
