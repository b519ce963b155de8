"""`tickwork tenants ...`: tenants' settings (fair-share weight and quotas, docs/fairness.md) and usage; setting
them is an admin's.

    tickwork tenants get me
    tickwork tenants set acme --weight 3 --max-active-jobs 100
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from tickwork.control.api_bodies import TenantView
from tickwork.model.policies import DispatchOrder

from tickwork_cli import render
from tickwork_cli.options import Session, api_command

tenants_app = typer.Typer(
    help="Tenants' settings (fair-share weight and quotas) and usage; setting them is an admin's.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(tenants_app, name="tenants")


def _quota_option(flag: str, what: str) -> Any:
    return typer.Option(flag, min=1, max=1_000_000, show_default=False, help=f"{what} at most (1-1000000).")


def _show_tenant(session: Session, found: TenantView) -> None:
    """The API's answer as JSON; as a table, one row per setting and usage figure."""
    view = render.plain(found)
    if session.as_json:
        session.show_one(view)
        return
    usage = {f"usage.{name}": value for name, value in view["usage"].items()}
    session.show_one({"tenant": view["tenant"], **view["settings"], **usage})


@tenants_app.command("get")
@api_command
def tenants_get(
    session: Session,
    tenant: Annotated[
        str, typer.Argument(help="A tenant's name (an admin may read any), or `me` for your own.", show_default=True)
    ] = "me",
) -> None:
    """A tenant's settings (the defaults where none are set) and current usage."""
    _show_tenant(session, session.client.my_tenant() if tenant == "me" else session.client.get_tenant(tenant))


@tenants_app.command("set")
@api_command
def tenants_set(
    tenant: Annotated[str, typer.Argument(help="The tenant's name (`me` is not one: name the tenant).")],
    session: Session,
    weight: Annotated[
        int | None, typer.Option("--weight", min=1, max=100, show_default=False, help="Fair-share weight, 1-100.")
    ] = None,
    max_active_jobs: Annotated[
        int | None, _quota_option("--max-active-jobs", "ACTIVE and PAUSED jobs and workflows")
    ] = None,
    max_runs_per_minute: Annotated[
        int | None, _quota_option("--max-runs-per-minute", "Runs dispatched a minute")
    ] = None,
    max_concurrent_runs: Annotated[int | None, _quota_option("--max-concurrent-runs", "Runs executing at once")] = None,
    dispatch_order: Annotated[
        DispatchOrder | None,
        typer.Option(
            "--dispatch-order",
            show_default=False,
            help="Which of a band's due runs a tick short of room claims first, for its jobs that set none: edf"
            " (earliest deadline, the default) or sjf (shortest expected run; docs/forecasts.md).",
        ),
    ] = None,
) -> None:
    """Set a tenant's weight and quotas (an admin's command).

    This replaces the tenant's whole settings: an option you leave out is not kept, it is unset.

    An unset weight is 1; an unset quota is no limit. So `--weight 2` alone also clears the quotas.

    Give every setting you want to keep. Functions see the change within 30 s.
    """
    chosen = {
        "weight": weight,
        "max_active_jobs": max_active_jobs,
        "max_runs_per_minute": max_runs_per_minute,
        "max_concurrent_runs": max_concurrent_runs,
        "dispatch_order": dispatch_order.value if dispatch_order is not None else None,
    }
    stored = render.plain(session.client.set_tenant(tenant, {k: v for k, v in chosen.items() if v is not None}))
    if session.as_json:
        session.show_one(stored)
    else:
        session.show_one({"tenant": tenant, **stored})
