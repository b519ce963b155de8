"""The lock files read as pins: what the layer is built from (shared/requirements.txt) and what the test
environment installs (requirements-dev.txt)."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[1]
LAYER_LOCK = ROOT / "shared" / "requirements.txt"
DEV_LOCK = ROOT / "requirements-dev.txt"
LAYER_REQUIREMENTS = ROOT / "shared" / "requirements.in"

# `name==version ; marker \` as uv writes a pin; its hashes follow on `--hash=sha256:...` lines.
_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: Path, environment: dict[str, str] | None = None) -> dict[str, str]:
    """The lock's pins whose markers hold in `environment` (this interpreter's when None)."""
    found = {}
    for line in lock.read_text().splitlines():
        match = _PIN.match(line)
        if match and (match.group(3) is None or Marker(match.group(3)).evaluate(environment)):
            found[normalise(match.group(1))] = match.group(2)
    return found


def hashes_per_pin(lock: Path) -> dict[str, int]:
    """How many `--hash` lines follow each pin."""
    counts: dict[str, int] = {}
    current = None
    for line in lock.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            current = normalise(match.group(1))
            counts[current] = 0
        elif current and line.strip().startswith("--hash=sha256:"):
            counts[current] += 1
    return counts


def installed_in(folder: Path) -> dict[str, str]:
    """The distributions installed in a folder (a layer's python/), by their dist-info metadata."""
    found = {}
    for info in folder.glob("*.dist-info"):
        metadata = (info / "METADATA").read_text(encoding="utf-8")
        name = re.search(r"^Name: (.+)$", metadata, re.M)
        version = re.search(r"^Version: (.+)$", metadata, re.M)
        if name is None or version is None:
            raise AssertionError(f"{info} has no Name or Version")
        found[normalise(name.group(1))] = version.group(1).strip()
    return found
