"""`tickwork --version`, and the warning a CLI older than its stack gives: once a command, on stderr, not failing."""

from __future__ import annotations

import json

import pytest
from tickwork import VERSION_HEADER, __version__
from tickwork_cli import client as http
from tickwork_cli import versions
from tickwork_cli.main import app
from typer.testing import CliRunner

JOBS_PAGE = {"items": [], "next_cursor": None}


def test_version_prints_the_one_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"tickwork {__version__}\n"


@pytest.fixture
def stack_at(monkeypatch):
    """The API answers with the stack version given; each request is counted."""
    monkeypatch.setattr(versions, "_warned", False)
    sent: list[str] = []

    def answer_as(version: str | None) -> list[str]:
        def transport(method, url, headers, body, timeout=30.0):
            sent.append(url)
            extra = {VERSION_HEADER: version} if version is not None else {}
            return http.HttpResponse(200, {"Content-Type": "application/json", **extra}, json.dumps(JOBS_PAGE).encode())

        monkeypatch.setattr(http, "transport", transport)
        return sent

    return answer_as


def _list_jobs_twice() -> tuple[int, str]:
    """One command that makes two requests: the warning must still come once."""
    runner = CliRunner()
    first = runner.invoke(app, ["jobs", "list", "--api-url", "http://127.0.0.1:9", "-o", "json"])
    second = runner.invoke(app, ["jobs", "list", "--api-url", "http://127.0.0.1:9", "-o", "json"])
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    return first.exit_code, first.stderr + second.stderr


def test_a_cli_older_than_its_stack_warns_once_and_carries_on(stack_at):
    sent = stack_at("999.0.0")
    code, stderr = _list_jobs_twice()
    assert code == 0
    assert stderr == (
        f"warning: this tickwork CLI is {__version__}, older than the stack it talks to (999.0.0): "
        "pip install --upgrade tickwork\n"
    )
    assert all("/v1/health" not in url for url in sent)  # read from the answers it gets anyway


@pytest.mark.parametrize("stack", [__version__, "0.0.1", "not-a-version", None])
def test_no_warning_when_the_stack_is_not_newer_or_does_not_say(stack_at, stack):
    stack_at(stack)
    _, stderr = _list_jobs_twice()
    assert stderr == ""


@pytest.mark.parametrize(
    ("mine", "theirs", "older"),
    [("0.1.0", "0.2.0", True), ("0.9.0", "0.10.0", True), ("1.0.0", "1.0.0", False), ("1.2", "1.1.9", False)],
)
def test_versions_compare_as_numbers_not_text(mine, theirs, older):
    assert versions.is_older(mine, theirs) is older
