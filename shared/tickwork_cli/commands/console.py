"""`tickwork console`: the web console for a deployed API, served on 127.0.0.1 by tickwork_console's signing
proxy.

    tickwork console --api-url <ApiUrl>
"""

from __future__ import annotations

from typing import Annotated

import typer
from tickwork_console.proxy import ConsoleServer

from tickwork_cli.client import Client, ConfigError


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def console(
    api_url: Annotated[
        str,
        typer.Option("--api-url", envvar="TICKWORK_API_URL", help="The deployed API's base URL.", show_default=False),
    ],
    profile: Annotated[
        str | None, typer.Option("--profile", envvar="AWS_PROFILE", help="AWS profile to sign with.")
    ] = None,
    region: Annotated[str | None, typer.Option("--region", help="Region to sign for (default: from the URL).")] = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Local port (0: any free one).")] = 8790,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="TICKWORK_API_KEY",
            help="X-Api-Key, for a local runtime started with --api-keys (then nothing is signed).",
        ),
    ] = None,
    accept_host: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-host",
            metavar="NAME",
            help="Answer for this host name too (besides localhost, 127.0.0.1 and [::1]); repeatable.",
        ),
    ] = None,
) -> None:
    """Open the web console for a deployed API: served on 127.0.0.1, each API call signed (SigV4) here.

    Like `kubectl proxy`: your AWS credentials (from --profile or the usual chain) sign the calls this process
    forwards; the browser never sees them. For `tickwork dev`, open http://127.0.0.1:3000/console/ instead.
    """
    try:
        # A deployed API takes IAM, so every call is signed; a local runtime started with --api-keys takes
        # the key instead (IAM cannot be played locally).
        client = Client(api_url, api_key=api_key, profile=profile, region=region, always_sign=api_key is None)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        server = ConsoleServer(client, port, accept_hosts=tuple(accept_host or ()))
    except OSError as exc:
        typer.echo(f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"Tickwork console for {client.base_url}: {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
