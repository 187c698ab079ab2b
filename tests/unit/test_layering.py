"""Imports point down the layers, and no module imports itself back (issue 25).

Every module under ``cortex_agents`` is parsed with :mod:`ast` (nothing is
imported), and every ``import`` of a ``cortex_agents`` module is checked —
at the top of a module, inside a function (a lazy import) and under ``if
TYPE_CHECKING:`` alike: a lazy or type-only import is still a dependency, it
only hides a cycle from the interpreter.

The layers, lowest first (:data:`LAYERS`). A unit is a subpackage or a
top-level module; a unit may import its own modules and any unit of a lower
layer, never one of a higher layer. The order is DESIGN §2's (substrate <
memory < persistence < runtime < tools < stages < cli), completed from what
the code imports today:

- ``errors`` is the one exception tree: every layer raises from it.
- ``_timestamps`` (UTC parsing and formatting) and ``_bundled`` (paths of the
  packaged prompts, cassettes and graphs) import only ``errors``.
- ``substrate`` (records, events, the fold) is the pure base of the graph.
- ``memory`` reads substrate records (the query engine users run).
- ``reference`` (the reference pipeline, the test oracle with seed 001's
  names) ranks memory's snapshots in plain Python; only tests call it, and
  ``testing`` hands it to users' test suites. ``rewrite`` (the algebra, cost
  and admission) reads substrate records; ``embeddings`` are memory's
  embedding scorers; ``picture`` draws a substrate ``GraphState``. None of
  the four imports another.
- ``snapshotfile``, the export/import file, is a document of substrate
  records, written in memory's canonical order and checked with rewrite's
  budget rules.
- ``persistence`` (savers, stores, export/import) stores the substrate and
  reads and writes snapshot files.
- ``scratch`` (per-node scratch memory) keeps its rows through persistence's
  SQL helpers.
- ``runtime`` (wires, the scheduler, stage_node) runs on persistence, rewrite,
  memory and scratch.
- ``tools`` (the LangChain tools) bind to a runtime's stage context.
- ``stages`` (the LLM stage kinds) run the tools in a tool loop.
- ``testing`` (cassettes, the pytest plugin, the memory oracle) serves users'
  test suites and may reach any library layer (today ``errors`` and, on first
  use, ``reference``).
- ``_demo``, ``server`` and the package's own ``__init__`` (the top-level
  surface) are entry points over the library; ``evaluation`` runs demo
  scenarios; ``cli`` and ``__main__`` are on top.

Not seen here: a name loaded by string at run time. The built-in scorer
registry (``memory/scorers.py``) names its loaders as
``"cortex_agents.embeddings:minilm_scorer"``, the same plug-in mechanism
users register their scorers with, so memory never imports ``embeddings``.

Cycles are counted between modules, and there are none. Should one ever have
to stay, it is named edge by edge in :data:`CYCLE_EDGES_ALLOWED` with why; an
entry whose import is gone, or that no longer closes a cycle, fails the test,
so the list only shrinks (it is empty).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import cortex_agents

ROOT = Path(cortex_agents.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("_timestamps", "_bundled"),
    ("substrate",),
    ("memory",),
    ("reference", "rewrite", "embeddings", "picture"),
    ("snapshotfile",),
    ("persistence",),
    ("scratch",),
    ("runtime",),
    ("tools",),
    ("stages",),
    ("testing",),
    ("_demo", "server", "__init__"),
    ("evaluation",),
    ("cli", "__main__"),
)
"""Units (subpackages, top-level modules), lowest layer first; one layer's units are peers."""

CYCLE_EDGES_ALLOWED: Mapping[tuple[str, str], str] = {
    # empty: none is left (issue 25's target). The last were five edges among memory's
    # snapshot, index, view, fields and lexical postings, removed by putting the index's
    # columns below its readers (memory/_index_columns.py) and passing the fields' class
    # and bodies down instead of importing them up.
}
"""Imports that close a cycle, each with why it stays (source module, imported module)."""


@dataclass(frozen=True, slots=True)
class Import:
    """One import of a ``cortex_agents`` module.

    Attributes:
        source: The importing module.
        target: The imported module (a package's ``__init__`` counts as the package).
        kind: ``top``, ``lazy`` (inside a function) or ``type`` (under TYPE_CHECKING).
        where: ``path:line`` of the statement.
    """

    source: str
    target: str
    kind: str
    where: str


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith(
        "TYPE_CHECKING"
    )


def _statements(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, kind
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for branch in child.body:
                yield from _statements(ast.Module(body=[branch], type_ignores=[]), "type")
            for branch in child.orelse:
                yield from _statements(ast.Module(body=[branch], type_ignores=[]), kind)
        else:
            inner = "lazy" if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else kind
            yield from _statements(child, "type" if kind == "type" else inner)


def imports(root: Path) -> list[Import]:
    """Every import of one of the package's own modules, by any module of the package."""
    modules = module_names(root)
    found = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for statement, kind in _statements(tree, "top"):
            if isinstance(statement, ast.Import):
                targets = [alias.name for alias in statement.names]
            else:
                base = statement.module or ""
                if statement.level:
                    anchor = package.split(".")[: len(package.split(".")) - statement.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                # `from pkg import sub` imports the module pkg.sub; `from pkg import name`, pkg
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in statement.names
                ]
            where = f"{path.relative_to(root.parent)}:{statement.lineno}"
            for target in dict.fromkeys(targets):
                if target.split(".")[0] == root.name and target != name:
                    found.append(Import(name, target, kind, where))
    return found


def unit(module: str) -> str:
    """The layer unit of a module: its subpackage or top-level module (``__init__``: the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(found: list[Import], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Each import of a higher layer's module, or of or by an undeclared unit, described."""
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    problems = []
    for imp in found:
        source, target = unit(imp.source), unit(imp.target)
        for undeclared in sorted({source, target} - rank.keys()):
            problems.append(f"{imp.where}: unit `{undeclared}` has no layer: add it to LAYERS")
        if source in rank and target in rank and rank[target] > rank[source]:
            problems.append(
                f"{imp.where}: {imp.source} ({source}, layer {rank[source]}) imports "
                f"{imp.target} ({target}, layer {rank[target]}) [{imp.kind}]: imports point down"
            )
    return problems


def cycles(found: list[Import], allowed: Mapping[tuple[str, str], str]) -> list[list[str]]:
    """The import cycles left once the ``allowed`` edges are taken out (strongly connected sets)."""
    graph: dict[str, set[str]] = {}
    for imp in found:
        graph.setdefault(imp.target, set())
        if (imp.source, imp.target) not in allowed:
            graph.setdefault(imp.source, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the package is ~150 modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return imports(ROOT)


def test_every_unit_has_a_layer_and_every_layer_names_a_unit():
    units = {unit(name) for name in module_names(ROOT)}
    declared = [name for layer in LAYERS for name in layer]
    assert len(declared) == len(set(declared)), "a unit is declared twice"
    assert units - set(declared) == set(), "a subpackage or top-level module has no layer"
    assert set(declared) - units == set(), "a layer names a unit that does not exist"


def test_imports_point_down(found):
    assert upward_imports(found, LAYERS) == []


def test_no_import_cycles_but_the_named_ones(found):
    assert cycles(found, CYCLE_EDGES_ALLOWED) == []


def test_every_allowed_cycle_edge_is_still_an_import_and_still_closes_a_cycle(found):
    edges = {(imp.source, imp.target) for imp in found}
    assert set(CYCLE_EDGES_ALLOWED) - edges == set(), "an allowed edge is gone: drop it"
    for edge in CYCLE_EDGES_ALLOWED:
        rest = {key: why for key, why in CYCLE_EDGES_ALLOWED.items() if key != edge}
        assert cycles(found, rest) != [], f"{edge} no longer closes a cycle: drop it"


def _package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / "cortex_agents"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_check_sees_an_upward_import_however_it_is_written(tmp_path):
    root = _package(
        tmp_path,
        {
            "memory/__init__.py": "",
            "memory/a.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from cortex_agents.runtime.wire import Wire\n"
                "def f():\n"
                "    import cortex_agents.runtime\n"
                "from ..runtime import wire\n"
                "from cortex_agents.errors import E\n"
            ),
            "runtime/__init__.py": "",
            "runtime/wire.py": "from cortex_agents.memory.a import f\n",
            "errors.py": "",
        },
    )
    found = upward_imports(imports(root), (("errors",), ("memory",), ("runtime",), ("__init__",)))
    assert [line.split(" [")[-1] for line in found] == [
        "type]: imports point down",
        "lazy]: imports point down",
        "top]: imports point down",
    ]
    assert all("cortex_agents.memory.a (memory, layer 1) imports" in line for line in found)


def test_the_check_sees_a_cycle_held_apart_by_a_lazy_import_and_an_undeclared_unit(tmp_path):
    root = _package(
        tmp_path,
        {
            "a.py": "import cortex_agents.b\n",
            "b.py": "def f():\n    from cortex_agents import a\n",
        },
    )
    found = imports(root)
    assert cycles(found, {}) == [["cortex_agents.a", "cortex_agents.b"]]
    assert cycles(found, {("cortex_agents.b", "cortex_agents.a"): "why"}) == []
    assert upward_imports(found, (("a",),)) == [
        "cortex_agents/a.py:1: unit `b` has no layer: add it to LAYERS",
        "cortex_agents/b.py:2: unit `b` has no layer: add it to LAYERS",
    ]
