"""The CLI's version against the stack's: a CLI older than the API it talks to may lack fields or commands the
stack has, so it says so, once a command, on stderr, and carries on.

The stack's version comes in every API answer's X-Tickwork-Version header (functions/api/app.py): no request of
its own. A version that is not plain dotted numbers is not compared.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TextIO

from tickwork import VERSION_HEADER, __version__

_warned = False  # one process is one command


def parsed(version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in version.strip().split("."))
    except ValueError:
        return None


def is_older(mine: str, theirs: str) -> bool:
    ours, stacks = parsed(mine), parsed(theirs)
    return ours is not None and stacks is not None and ours < stacks


def stack_version(headers: Mapping[str, str]) -> str | None:
    wanted = VERSION_HEADER.lower()
    return next((value for name, value in headers.items() if name.lower() == wanted), None)


def warn_if_older(headers: Mapping[str, str], *, mine: str = __version__, stream: TextIO | None = None) -> None:
    """Warn, the first time in this process, when the answer's stack is newer than this CLI."""
    global _warned  # noqa: PLW0603 - once per process
    theirs = stack_version(headers)
    if _warned or theirs is None or not is_older(mine, theirs):
        return
    _warned = True
    print(
        f"warning: this tickwork CLI is {mine}, older than the stack it talks to ({theirs}): "
        "pip install --upgrade tickwork",
        file=stream or sys.stderr,
    )
