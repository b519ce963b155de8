"""Build the template's functions and layers as `sam build` lays them out, for this machine's architecture.

`sam build` builds for the template's architecture (arm64), whose compiled wheels (pydantic_core) cannot be
imported here. This build does what SAM does, for the machine it runs on, with the functions' own Python:
- each `AWS::Serverless::Function` gets `<out>/<LogicalId>/`, a copy of its CodeUri;
- each `AWS::Serverless::LayerVersion` with `BuildMethod: python3.x` gets `<out>/<LogicalId>/python/`, a copy
  of its ContentUri plus the packages of its `requirements.txt`, installed from that lock file alone
  (`--no-deps`, hashes checked), by the runtime's interpreter;
- `<out>/template.yaml` is the template with CodeUri and ContentUri pointing at those folders.

The layer's packages are cached under `<out>/.packages/<lock digest>/`, so a rebuild copies code only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickwork_local.stack.template import DEFAULT_TEMPLATE, load_template

BUILD_DIR = DEFAULT_TEMPLATE.parent / ".build" / "local"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")


class BuildError(RuntimeError):
    """The build could not be made: the message says which resource and why."""


def runtime_version(template: dict[str, Any]) -> str:
    """The functions' Python as `major.minor`, from Globals.Function.Runtime (python3.13 -> 3.13)."""
    runtime = str(template.get("Globals", {}).get("Function", {}).get("Runtime", ""))
    match = re.fullmatch(r"python(\d+\.\d+)", runtime)
    if match is None:
        raise BuildError(f"Globals.Function.Runtime is {runtime!r}, not a pythonX.Y runtime")
    return match.group(1)


def _runs(python: str, version: str) -> bool:
    try:
        out = subprocess.run(  # noqa: S603 - a candidate interpreter asked its version
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def find_runtime_python(version: str) -> str:
    """An interpreter of the functions' Python version: TICKWORK_RUNTIME_PYTHON, `pythonX.Y` on PATH, or pyenv's.

    pyenv's shims answer only for the selected versions, so its install folders are looked at directly."""
    candidates = [os.environ.get("TICKWORK_RUNTIME_PYTHON", ""), shutil.which(f"python{version}") or ""]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += [str(p) for p in sorted(pyenv_root.glob(f"versions/{version}*/bin/python{version}"), reverse=True)]
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        candidates.append(sys.executable)
    for candidate in filter(None, candidates):
        if _runs(candidate, version):
            return candidate
    raise BuildError(
        f"the functions run on Python {version} (template.yaml Runtime), and no python{version} was found: "
        f"install it (pyenv install {version}), or set TICKWORK_RUNTIME_PYTHON to its path"
    )


@dataclass(frozen=True)
class BuiltStack:
    """What a build made: the built template and where each function and layer lies."""

    root: Path
    template: dict[str, Any]
    python: str

    @property
    def template_path(self) -> Path:
        return self.root / "template.yaml"

    def function_dir(self, logical_id: str) -> Path:
        return self.root / logical_id

    def layer_paths(self, function_id: str) -> list[Path]:
        """The sys.path entries Lambda makes of the function's layers: each layer's python/lib/pythonX.Y/site-packages
        and python/ (what /opt holds), in the template's order."""
        version = f"python{runtime_version(self.template)}"
        paths = []
        for layer in self.layer_dirs(function_id):
            paths += [layer / "python" / "lib" / version / "site-packages", layer / "python"]
        return paths

    def layer_dirs(self, function_id: str) -> list[Path]:
        """The folders of the function's layers that this build made, in the template's order."""
        merged = {
            **self.template.get("Globals", {}).get("Function", {}),
            **self.template["Resources"][function_id].get("Properties", {}),
        }
        dirs = []
        for layer in merged.get("Layers", []):
            if isinstance(layer, dict) and set(layer) == {"Ref"} and (self.root / layer["Ref"]).is_dir():
                dirs.append(self.root / layer["Ref"])
        return dirs


def _copy(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=_IGNORED)


def _packages(python: str, lock: Path, cache: Path) -> Path:
    """The lock file's packages installed for `python`, once per lock digest."""
    digest = hashlib.sha256(lock.read_bytes() + python.encode()).hexdigest()[:16]
    target = cache / digest
    if (target / ".complete").is_file():
        return target
    if target.exists():
        shutil.rmtree(target)
    # A lock with hashes puts pip in hash-checking mode: every package pinned and checked, none resolved anew.
    command = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--target", str(target), "-r", str(lock)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603 - pip, from the lock
    if done.returncode != 0:
        raise BuildError(f"installing {lock} with {python} failed:\n{done.stderr[-4000:]}")
    (target / ".complete").touch()
    return target


def build(template_path: Path | None = None, out: Path | None = None, *, python: str | None = None) -> BuiltStack:
    """Build every function and python layer of the template into `out` (default .build/local)."""
    source = Path(template_path or DEFAULT_TEMPLATE)
    root = Path(out or BUILD_DIR).resolve()
    template = load_template(source)
    python = python or find_runtime_python(runtime_version(template))
    base = source.parent
    root.mkdir(parents=True, exist_ok=True)
    built = json.loads(json.dumps(template))
    for logical_id, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            _copy(base / props["CodeUri"], root / logical_id)
            built["Resources"][logical_id]["Properties"]["CodeUri"] = logical_id
        elif resource.get("Type") == "AWS::Serverless::LayerVersion" and isinstance(props.get("ContentUri"), str):
            method = str(resource.get("Metadata", {}).get("BuildMethod", ""))
            if not method.startswith("python"):
                continue
            content = base / props["ContentUri"]
            layer_python = root / logical_id / "python"
            _copy(content, layer_python)
            lock = content / "requirements.txt"
            if lock.is_file():
                packages = _packages(python, lock, root / ".packages")
                shutil.copytree(packages, layer_python, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".complete"))
            built["Resources"][logical_id]["Properties"]["ContentUri"] = logical_id
    # JSON is YAML: the built template keeps the long-form intrinsics that load_template gives.
    (root / "template.yaml").write_text(json.dumps(built, indent=1), encoding="utf-8")
    return BuiltStack(root=root, template=built, python=python)


def load_built(root: Path, *, python: str | None = None) -> BuiltStack:
    """A build made earlier (`tickwork build`), found by its template."""
    path = Path(root) / "template.yaml"
    if not path.is_file():
        raise BuildError(f"{root} holds no built template.yaml: build it first (tickwork build --out {root})")
    template = load_template(path)
    return BuiltStack(
        root=Path(root).resolve(), template=template, python=python or find_runtime_python(runtime_version(template))
    )
