"""docs/house.md's "Where things live", module by module, generated from the modules' own docstrings so it cannot drift:
every folder and module of shared/tickwork, functions/ and infrastructure/tickwork_local, each with the first
sentence of its docstring. And every `tickwork.<module>` the README and docs/ name must exist.

    python -m tickwork_local.generate.house_map           # rewrite the generated section in docs/house.md
    python -m tickwork_local.generate.house_map --check   # exit 1 if it differs or names a missing module (a test runs this)

The section stands between `<!-- generated: house-map ... -->` and `<!-- end generated: house-map -->`.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from tickwork_local.stack.template import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
HOUSE = DOCS / "house.md"
ROOTS = ("shared/tickwork", "functions", "infrastructure/tickwork_local")
SHARED = REPO_ROOT / "shared"
MAX_SUMMARY = 170  # a table cell stays one readable line
_SECTION = re.compile(
    r"(?P<begin><!-- generated: house-map [^>]*-->\n)(?P<body>.*?)(?P<end><!-- end generated: house-map -->)", re.DOTALL
)
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z(`]|$)")
_NAMED_MODULE = re.compile(r"(?<![\w/.-])tickwork(?:\.[A-Za-z_]\w*)+")


def summary(path: Path) -> str:
    """The first sentence of the module's docstring, on one line, shortened at a clause if it is long."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        raise ValueError(f"{path.relative_to(REPO_ROOT)} has no docstring: say in one sentence what it holds")
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    sentence = paragraph[: end.end()] if end else paragraph
    if len(sentence) > MAX_SUMMARY:
        cut = max(sentence.rfind(mark, 0, MAX_SUMMARY) for mark in ("; ", ", ", ": ", " ("))
        sentence = sentence[:cut].rstrip() + " …"
    return sentence.replace("|", "\\|")


def _entries(root: Path) -> list[Path]:
    """A folder's modules, each package's `__init__` standing for the package, packages after modules."""
    found = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(found, key=lambda p: (p.parent.relative_to(root).parts, p.name != "__init__.py", p.name))


def section() -> str:
    rows = ["| Module | What it holds |", "|---|---|"]
    for name in ROOTS:
        for path in _entries(REPO_ROOT / name):
            shown = path.parent if path.name == "__init__.py" else path
            label = f"`{shown.relative_to(REPO_ROOT).as_posix()}{'/' if shown.is_dir() else ''}`"
            rows.append(f"| {label} | {summary(path)} |")
    return "\n".join(rows)


def render(document: str) -> str:
    if not _SECTION.search(document):
        raise ValueError("docs/house.md has no generated house-map section")
    return _SECTION.sub(lambda m: f"{m.group('begin')}{section()}\n{m.group('end')}", document, count=1)


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def missing_modules(text: str) -> list[str]:
    """Every `tickwork.a.b.C` in the text whose module does not exist, or whose module does not define C."""
    missing: list[str] = []
    for dotted in sorted(set(_NAMED_MODULE.findall(text))):
        parts = dotted.split(".")
        depth = len(parts)
        while depth > 0:
            base = SHARED.joinpath(*parts[:depth])
            module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
            if module.is_file():
                break
            depth -= 1
        rest = parts[depth:]
        if depth == 0 or (rest and rest[0] not in _top_level_names(module)):
            missing.append(dotted)
    return missing


def problems() -> list[str]:
    found: list[str] = []
    if render(HOUSE.read_text(encoding="utf-8")) != HOUSE.read_text(encoding="utf-8"):
        found.append(
            "docs/house.md: its house map differs from the modules; run python -m tickwork_local.generate.house_map"
        )
    for doc in (README, *sorted(DOCS.glob("*.md"))):
        found += [f"{doc.name}: names {name}, which does not exist" for name in missing_modules(doc.read_text("utf-8"))]
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        found = problems()
        if found:
            print("\n".join(found))
        return 1 if found else 0
    current = HOUSE.read_text(encoding="utf-8")
    wanted = render(current)
    if wanted != current:
        HOUSE.write_text(wanted, encoding="utf-8")
        print(f"rewrote the house map in {HOUSE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
