"""No function in the package is longer than 80 lines (issue 25: "functions under ~80 lines").

A function's length is what ``ast`` gives: from its ``def`` line to its last
line, decorators left out, nested functions counted inside the one that holds
them. A longer one is split into named steps (small private helpers), not
allow-listed.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import cortex_agents

MAX_LINES = 80
PACKAGE = Path(cortex_agents.__file__).resolve().parent


def _long_functions(source: str, where: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source, filename=where)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES:
                yield f"{where}:{node.lineno} {node.name} ({lines} lines)"


def test_no_function_in_the_package_is_longer_than_80_lines():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100  # the package itself, not an empty folder
    found = [
        hit
        for path in modules
        for hit in _long_functions(
            path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent))
        )
    ]
    assert found == []


def test_the_count_runs_from_def_to_last_line_and_includes_nested_functions():
    body = "".join(f"x{i} = {i}\n" for i in range(77))
    source = (
        "@decorator\n"  # not counted
        "async def fits():\n"  # 80 lines: at the limit
        + textwrap.indent(body + "x77 = 77\n", "    ")
        + "    return 0\n\n\n"
        + "def outer():\n"  # 81 lines
        + "    def inner():\n"
        + textwrap.indent(body, "        ")
        + "        pass\n"
        + "    return inner\n"
    )
    assert list(_long_functions(source, "m.py")) == ["m.py:84 outer (81 lines)"]
