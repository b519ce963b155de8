"""Tickwork, the domain: a serverless job scheduler in rooms by stage (docs/house.md)."""

# The one place the version is written: the wheel's (pyproject.toml reads it), `tickwork --version`'s and the API's
# (GET /v1/health). A constant, not package metadata: the layer is deployed as source, without any.
__version__ = "0.1.0"
# Every API answer carries the version in this header, so a client learns it without asking (tickwork_cli.versions).
VERSION_HEADER = "X-Tickwork-Version"
