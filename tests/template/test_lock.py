"""The layer's runtime dependencies are declared once (shared/requirements.in), locked with hashes
(shared/requirements.txt, what `sam build` installs into the layer), and are the versions the tests import."""

from __future__ import annotations

import importlib.metadata
import tomllib

from packaging.requirements import Requirement

from tests.locks import DEV_LOCK, LAYER_LOCK, LAYER_REQUIREMENTS, ROOT, hashes_per_pin, normalise, pins


def _requirements() -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in LAYER_REQUIREMENTS.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def test_pyproject_reads_its_dependencies_from_the_layers_list_and_the_clis() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "dependencies" not in project["project"]
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version", "dependencies"]
    dynamic = project["tool"]["setuptools"]["dynamic"]
    assert dynamic["dependencies"] == {"file": ["shared/requirements.in", "requirements-cli.in"]}
    assert dynamic["version"] == {"attr": "tickwork.__version__"}  # the one place it is written


def test_the_test_tools_are_a_dependency_group_not_an_extra_of_the_wheel() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = {Requirement(r).name for rs in project["project"]["optional-dependencies"].values() for r in rs}
    assert extras == {"moto"}
    assert "pytest" in {Requirement(r).name for r in project["dependency-groups"]["test"]}


def test_every_declared_requirement_is_pinned_by_the_layer_lock_within_its_range() -> None:
    locked = pins(LAYER_LOCK, {"python_version": "3.13", "python_full_version": "3.13.0", "sys_platform": "linux"})
    for requirement in _requirements():
        version = locked.get(normalise(requirement.name))
        assert version is not None, f"{requirement.name} is not in {LAYER_LOCK.name}: run make lock"
        assert requirement.specifier.contains(version, prereleases=True), f"{requirement} but locked {version}"


def test_every_layer_pin_has_hashes_and_agrees_with_the_dev_lock() -> None:
    counts = hashes_per_pin(LAYER_LOCK)
    assert counts
    assert all(n > 0 for n in counts.values()), counts
    dev = pins(DEV_LOCK)
    for name, version in pins(LAYER_LOCK).items():
        assert dev.get(name) == version, f"{name}: layer {version}, dev {dev.get(name)}: run make lock"


def test_the_tests_import_the_locked_versions() -> None:
    wrong = {}
    for name, version in pins(LAYER_LOCK).items():
        installed = importlib.metadata.version(name)
        if installed != version:
            wrong[name] = (installed, version)
    assert not wrong, f"installed vs locked: {wrong} (make rebuilds .venv from the locks)"
