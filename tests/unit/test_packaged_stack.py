"""Where `tickwork dev` finds the template it runs: a clone's own, else the copy the wheel carries (package data),
beside the functions it names."""

from __future__ import annotations

from pathlib import Path

from tickwork_local.stack.template import DEFAULT_TEMPLATE, REPO_ROOT, default_template


def test_in_a_clone_the_clones_template_is_run():
    assert default_template() == REPO_ROOT / "template.yaml" == DEFAULT_TEMPLATE


def test_outside_a_clone_the_wheels_copy_is_run(tmp_path: Path):
    site_packages, packaged = tmp_path / "lib", tmp_path / "lib" / "tickwork_local" / "stack_files"
    assert default_template(site_packages, packaged) == packaged / "template.yaml"
    (site_packages / "template.yaml").parent.mkdir(parents=True, exist_ok=True)
    (site_packages / "template.yaml").write_text("Resources: {}\n")
    assert default_template(site_packages, packaged) == site_packages / "template.yaml"


def test_the_wheel_carries_the_functions_every_function_of_the_template_names():
    """pyproject.toml's packages under tickwork_local.stack_files (their modules) and their package data hold each
    function's CodeUri folder."""
    import tomllib

    from tickwork_local.stack.template import load_template

    setuptools = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    root = "tickwork_local.stack_files"
    carried: set[Path] = set()
    for package in setuptools["packages"]:
        if package == root or package.startswith(root + "."):
            folder = Path(*package.removeprefix(root).lstrip(".").split(".")) if package != root else Path()
            globs = ["*.py", *setuptools["package-data"].get(package, [])]
            carried |= {path.relative_to(REPO_ROOT) for pattern in globs for path in (REPO_ROOT / folder).glob(pattern)}
    for logical_id, resource in load_template()["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            code = Path(resource["Properties"]["CodeUri"])
            sources = {p.relative_to(REPO_ROOT) for p in (REPO_ROOT / code).rglob("*") if p.is_file()}
            sources = {p for p in sources if "__pycache__" not in p.parts}
            assert sources <= carried, (logical_id, sorted(sources - carried))
