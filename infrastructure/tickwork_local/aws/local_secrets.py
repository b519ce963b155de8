"""`tickwork secrets put NAME [VALUE]`: a secret on the local runtime's endpoint (`tickwork dev`'s moto), for jobs'
`$secret` references (docs/security.md). Local use only: it refuses an endpoint that is not on this machine, so it
never writes to AWS; deployed, put secrets in Secrets Manager itself."""

from __future__ import annotations

import ipaddress
import sys
from typing import Annotated
from urllib.parse import urlsplit

import typer

from tickwork_local.runtime.lambda_runtime import REGION

DEFAULT_ENDPOINT = "http://127.0.0.1:5000"  # tickwork dev's moto (DEFAULT_MOTO_PORT)

secrets_app = typer.Typer(
    help="Secrets on the local runtime (tickwork dev), for jobs' $secret references; local use only.",
    no_args_is_help=True,
)


def _on_this_machine(endpoint: str) -> bool:
    host = (urlsplit(endpoint).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@secrets_app.command("put")
def put(
    name: Annotated[str, typer.Argument(help="the secret's name, under tickwork/<tenant>/ (tenant `default` locally)")],
    value: Annotated[str | None, typer.Argument(help="its value; read from standard input when not given")] = None,
    endpoint: Annotated[str, typer.Option(help="the local endpoint (tickwork dev's moto)")] = DEFAULT_ENDPOINT,
) -> None:
    """Create the secret, or give it a new value (runs use it within the stack's SecretCacheSeconds, 5 minutes by default). Prints its ARN, never the value."""
    from tickwork.aws.clients import AwsClients  # noqa: PLC0415 - loaded only when the command runs

    if not _on_this_machine(endpoint):
        sys.stderr.write(f"tickwork secrets: {endpoint} is not on this machine; this command is for tickwork dev\n")
        raise typer.Exit(2)
    secret = sys.stdin.read().rstrip("\n") if value is None else value
    clients = AwsClients(
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - moto takes any
    )
    client = clients.client("secretsmanager")
    try:
        answer = client.create_secret(Name=name, SecretString=secret)
        said = "created"
    except client.exceptions.ResourceExistsException:
        answer = client.put_secret_value(SecretId=name, SecretString=secret)
        said = "updated (runs use the new value within SecretCacheSeconds, 5 minutes by default)"
    typer.echo(f"{said}: {answer['ARN']}")
