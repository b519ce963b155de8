"""`pip install tickwork`: the wheel `make dist` builds, installed in a fresh venv (the dev lock's versions as
constraints), holds the CLI, the typed client and the console and no test tool, and works against `tickwork dev`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tickwork import __version__

from tests.e2e.conftest import BIN, READY_SECONDS, ROOT, Api, Node, instant_in, running_node, wait_for
from tests.processes import Proc

pytestmark = pytest.mark.e2e

PACKAGES = {"tickwork", "tickwork_cli", "tickwork_console", "tickwork_local"}
TEST_TOOLS = {"pytest", "pytest-xdist", "hypothesis", "ruff", "mypy", "schemathesis", "playwright", "cfn-lint"}
MAX_WHEEL_BYTES = 2 * 1024 * 1024
EXAMPLES = ROOT / "docs" / "examples" / "jobs-as-code"


def _run(command: list[str | Path], **kwargs) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command], check=False, capture_output=True, text=True, timeout=120, **kwargs
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel() -> Path:
    # -o: the venv is as the tests found it, never rebuilt under them.
    built = _run(["make", "--no-print-directory", "-o", ".venv/.installed", "dist"], cwd=ROOT)
    match = re.search(r"^(dist/tickwork-[^:]+\.whl): (\d+) bytes$", built.stdout, re.M)
    assert match, built.stdout
    return ROOT / match[1]


def _venv_with(requirement: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with `requirement` (the wheel, or it with an extra) and what it needs, nothing else; its bin
    folder."""
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    uv = BIN / "uv"
    _run([uv, "venv", "--quiet", "--python", sys.executable, venv])
    python = venv / "bin" / "python"
    _run([uv, "pip", "install", "--quiet", "--python", python, "-c", ROOT / "requirements-dev.txt", requirement])
    return venv / "bin"


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv_with(str(wheel), tmp_path_factory)


@pytest.fixture(scope="module")
def installed_dev(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install 'tickwork[dev]'`: the local runtime too."""
    return _venv_with(f"{wheel}[dev]", tmp_path_factory)


def _outside_the_repo(bin_dir: Path) -> dict[str, str]:
    """As a user's shell: the venv first on PATH, no path into the repository's sources."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TICKWORK_API_URL", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    with running_node("wheel") as started:
        yield started


def test_the_wheel_holds_the_clients_and_no_test_tools(wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    size = wheel.stat().st_size
    with capsys.disabled():
        print(f"\n{wheel.name}: {size} bytes ({size / 1024:.0f} KiB)")
    assert size < MAX_WHEEL_BYTES
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(f"tickwork-{__version__}.dist-info/METADATA").decode()
    assert {name.split("/")[0] for name in names} == {*PACKAGES, f"tickwork-{__version__}.dist-info"}
    assert not [name for name in names if "/tests/" in name or name.startswith("tests/")]
    assert "tickwork_console/static/index.html" in names
    # What `tickwork dev` runs: the template and the functions it names, and nothing else of the repository's root.
    stack = sorted(name.removeprefix("tickwork_local/stack_files/") for name in names if "/stack_files/" in name)
    assert "template.yaml" in stack
    assert {"functions/api/app.py", "functions/api/openapi.json", "functions/api/routes/jobs.py"} <= set(stack)
    assert all(name == "template.yaml" or name.startswith("functions/") for name in stack), stack
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)(.*)$", metadata, re.M)
    assert f"Version: {__version__}" in metadata.splitlines()
    assert not {name.lower() for name, _ in requires} & TEST_TOOLS
    assert ("moto", '[server]>=5.1; extra == "dev"') in requires  # tickwork[dev]: the local runtime


def test_the_installed_cli_runs_and_reports_the_version(installed: Path, tmp_path: Path) -> None:
    env = _outside_the_repo(installed)
    assert "Usage: tickwork" in _run([installed / "tickwork", "--help"], env=env, cwd=tmp_path).stdout
    assert _run([installed / "tickwork", "--version"], env=env, cwd=tmp_path).stdout == f"tickwork {__version__}\n"
    listed = _run([installed / "python", "-c", DISTRIBUTIONS], env=env, cwd=tmp_path)
    assert "typer" in json.loads(listed.stdout)
    assert not set(json.loads(listed.stdout)) & TEST_TOOLS


DISTRIBUTIONS = "import importlib.metadata as m, json; print(json.dumps([d.name.lower() for d in m.distributions()]))"


def test_the_installed_cli_plans_the_docs_examples_against_tickwork_dev(
    installed: Path, node: Node, tmp_path: Path
) -> None:
    done = subprocess.run(
        [installed / "tickwork", "plan", "-f", EXAMPLES, "--api-url", node.api.url, "-o", "json"],
        capture_output=True,
        text=True,
        env=_outside_the_repo(installed),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr  # 2: changes to make
    assert done.stderr == ""  # the same version as the stack: no warning
    assert "nightly-export" in done.stdout


CLIENT_ROUND_TRIP = """
import json, sys
import tickwork_cli
from tickwork_cli.api_client import Client
assert tickwork_cli.__file__.startswith(sys.prefix), tickwork_cli.__file__
client = Client(sys.argv[1])
job = client.create_job({"name": "from-the-wheel", "type": "echo", "payload": {"n": 1}, "schedule": {"rate": "1 hour"}})
got = client.get_job(job.id)
print(json.dumps({"created": job.id, "got": got.id, "name": got.name, "payload": got.payload}))
"""


def test_the_installed_client_creates_and_reads_a_job(installed: Path, node: Node, tmp_path: Path) -> None:
    done = _run(
        [installed / "python", "-c", CLIENT_ROUND_TRIP, node.api.url], env=_outside_the_repo(installed), cwd=tmp_path
    )
    answer = json.loads(done.stdout)
    assert answer["created"] == answer["got"]
    assert answer["name"] == "from-the-wheel"
    assert node.api.get(f"/v1/jobs/{answer['created']}")["payload"] == {"n": 1}


def test_tickwork_dev_from_the_installed_wheel_runs_a_job_outside_the_repository(
    installed_dev: Path, tmp_path: Path
) -> None:
    """`pip install 'tickwork[dev]'`, then `tickwork dev` in a folder of one's own: the template and the functions
    are the wheel's (no clone), and a job runs to its result."""
    env = _outside_the_repo(installed_dev)
    where = _run([installed_dev / "python", "-c", TEMPLATE_IN_USE], env=env, cwd=tmp_path).stdout.strip()
    assert where.startswith(str(installed_dev.parent)), where  # the venv's copy, not the repository's
    command = [installed_dev / "tickwork", "dev", "--port", "0", "--moto-port", "0", "--tick-seconds", "2"]
    proc = Proc.start("wheel-dev", [str(part) for part in command], cwd=tmp_path, env=env)
    try:
        api = Api(proc.wait_ready(READY_SECONDS).api_url)
        job = api.create_job(name="from-the-wheels-runtime", payload={"n": 1}, schedule={"at": instant_in(3)})
        runs = wait_for(lambda: [r for r in api.runs(job["id"]) if r["status"] == "SUCCEEDED"], 60, what="a run")
        assert api.get(f"/v1/runs/{runs[0]['id']}/result") == {"n": 1}
    finally:
        code = proc.terminate()
    assert code == 0, proc.output()


TEMPLATE_IN_USE = "from tickwork_local.stack.template import DEFAULT_TEMPLATE; print(DEFAULT_TEMPLATE.resolve())"
