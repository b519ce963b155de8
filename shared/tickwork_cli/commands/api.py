"""`tickwork api ...`: the API itself: whether it answers and its version, and its OpenAPI document (for a tool,
or a client generated from it).

    tickwork api health
    tickwork api openapi > openapi.json
"""

from __future__ import annotations

import typer

from tickwork_cli import render
from tickwork_cli.options import Session, api_command

api_app = typer.Typer(help="The API itself: its health and version, and its OpenAPI document.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(api_app, name="api")


@api_app.command("health")
@api_command
def api_health(session: Session) -> None:
    """Whether the API answers, and the version it runs."""
    session.show_one(session.client.health())


@api_app.command("openapi")
@api_command
def api_openapi(session: Session) -> None:
    """The API's OpenAPI document, as JSON whatever --output says."""
    typer.echo(render.as_json(session.client.openapi()))
