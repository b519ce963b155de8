"""docs/local.md's table of `tickwork dev`'s options, generated from the command's own options (their names,
values, defaults and help), so that the page cannot drift from `tickwork dev --help`.

    python -m tickwork_local.generate.options_doc           # rewrite the table in docs/local.md
    python -m tickwork_local.generate.options_doc --check   # exit 1 when the committed table differs (a test runs this)

The table stands between `<!-- generated: dev-options ... -->` and `<!-- end generated: dev-options -->`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import typer

from tickwork_local.cli import register
from tickwork_local.generate.deploy_doc import write_or_check
from tickwork_local.stack.template import REPO_ROOT

LOCAL_DOC = REPO_ROOT / "docs" / "local.md"
_SECTION = re.compile(
    r"(?P<begin><!-- generated: dev-options [^>]*-->\n)(?P<body>.*?)(?P<end><!-- end generated: dev-options -->)",
    re.DOTALL,
)


def dev_command() -> Any:
    """`tickwork dev` as typer builds it (its click command, from typer's own copy of click)."""
    app = typer.Typer()
    register(app)
    return typer.main.get_command(app).commands["dev"]  # type: ignore[attr-defined]


def _name(option: Any) -> str:
    flag = max(option.opts, key=len)
    if option.is_flag:
        return f"`{flag}`"
    numeric = isinstance(option.default, int | float) and not isinstance(option.default, bool)
    return f"`{flag} {option.metavar or ('N' if numeric else 'TEXT')}`"


def _default(option: Any) -> str:
    if option.is_flag or option.default in (None, (), [], ""):
        return ""
    return str(option.default)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def section(command: Any = None) -> str:
    rows = ["| option | default | what |", "|---|---|---|"]
    for param in (command or dev_command()).params:
        if param.opts[0].startswith("--") and not param.hidden:
            rows.append(f"| {_name(param)} | {_default(param)} | {_cell(param.help or '')} |")
    return "\n".join(rows)


def render(document: str, command: Any = None) -> str:
    if not _SECTION.search(document):
        raise ValueError("docs/local.md has no generated dev-options section")
    table = section(command)
    return _SECTION.sub(lambda m: f"{m.group('begin')}{table}\n{m.group('end')}", document, count=1)


def main(argv: list[str] | None = None, path: Path = LOCAL_DOC) -> int:
    args = sys.argv[1:] if argv is None else argv
    return write_or_check(path, render, args, "tickwork_local.generate.options_doc")


if __name__ == "__main__":
    raise SystemExit(main())
