"""The web console: static pages (static/, ES modules with no build step) that are a client of the API, like
the CLI (tickwork_cli). `tickwork dev` serves them at /console beside the API; `tickwork console` serves them on
127.0.0.1 and forwards /v1 to a deployed API, signed (tickwork_console.proxy)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

STATIC_DIR = Path(__file__).resolve().parent / "static"
PREFIX = "/console"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".md": "text/markdown; charset=utf-8",
}


class Asset(NamedTuple):
    body: bytes
    content_type: str


def is_console_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def asset(path: str) -> Asset | None:
    """The file a /console/... URL path names, or None: unknown, not a file, or outside static/.

    `/console` and `/console/` are the page. The path is resolved and must stay under static/, so `..` (sent
    raw or percent-encoded: the caller passes the path still encoded, and it is not decoded here) and symlinks
    cannot reach other files. Only the types in CONTENT_TYPES are served.
    """
    if not is_console_path(path):
        return None
    relative = path[len(PREFIX) :].lstrip("/") or "index.html"
    if "\\" in relative or "\0" in relative or "%" in relative:
        return None
    candidate = (STATIC_DIR / relative).resolve()
    if not candidate.is_relative_to(STATIC_DIR) or not candidate.is_file():
        return None
    content_type = CONTENT_TYPES.get(candidate.suffix.lower())
    if content_type is None:
        return None
    return Asset(candidate.read_bytes(), content_type)
