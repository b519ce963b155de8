"""No class in shared/tickwork over 250 lines unless a comment right above it, or its docstring, says why it must be
one piece (issue 26): a long class is split along a seam, or says why it has none."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "shared" / "tickwork"
MAX_LINES = 250
REASON = "one piece"


def _says_why(lines: list[str], node: ast.ClassDef) -> bool:
    docstring = ast.get_docstring(node) or ""
    if REASON in docstring.lower():
        return True
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    above = first - 2  # the line directly above the class (0-based), then the comment block it ends
    while above >= 0 and lines[above].lstrip().startswith("#"):
        if REASON in lines[above].lower():
            return True
        above -= 1
    return False


def long_classes_without_a_reason(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_LINES and not _says_why(lines, node):
                    found.append(f"{path.relative_to(root)}: {node.name} ({length} lines)")
    return found


def test_no_class_is_over_250_lines_without_saying_why_it_is_one_piece():
    assert long_classes_without_a_reason() == []


def test_the_check_finds_a_long_class_and_accepts_the_comment_above_it(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"class Long:\n{body}")
    (tmp_path / "said.py").write_text(f"# One piece: a reason.\nclass Said:\n{body}")
    assert long_classes_without_a_reason(tmp_path) == ["long.py: Long (251 lines)"]
