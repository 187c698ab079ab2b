"""No public module outside the declared packages (issue 25, item 1).

httpx's shape: a package's implementation lives in private ``_x.py`` modules and
its ``__init__`` re-exports the public names, so each name has one import path
(``cortex_agents.runtime.WireBuilder``, never ``cortex_agents.runtime.wire.WireBuilder``).
Every module file under ``cortex_agents`` is one of:

- a package's ``__init__.py`` (the package is the public path);
- a private module: its name, or a folder on its path, starts with ``_``;
- on :data:`PUBLIC_MODULES`, each with why it stays public.

Adding ``cortex_agents/runtime/helpers.py`` fails here: name it ``_helpers.py`` and
re-export what users need from ``cortex_agents/runtime/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import cortex_agents

ROOT = Path(cortex_agents.__file__).parent

PUBLIC_MODULES: Mapping[str, str] = {
    "errors.py": "the documented home of every error (`::: cortex_agents.errors` in docs/reference.md)",
    "server.py": "langgraph.json names `cortex_agents.server:fanout_demo` and `.checkpointer`",
    "__main__.py": "`python -m cortex_agents` runs it; Python looks it up by this name",
    "testing/pytest_plugin.py": (
        "pyproject.toml's pytest11 entry point and users' `pytest_plugins` name "
        "`cortex_agents.testing.pytest_plugin`"
    ),
}
"""Modules that stay public though not a package's ``__init__``, each with why (path under the package)."""


def public_modules(root: Path) -> list[str]:
    """Every module under ``root`` that is neither an ``__init__`` nor private, as a relative path."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if path.name == "__init__.py" or any(part.startswith("_") for part in relative.parts):
            continue
        found.append(relative.as_posix())
    if (root / "__main__.py").is_file():
        found.append("__main__.py")
    return sorted(found)


def test_every_module_is_an_init_private_or_named_with_a_reason():
    unexplained = sorted(set(public_modules(ROOT)) - set(PUBLIC_MODULES))
    assert unexplained == [], (
        f"public modules {unexplained}: name them `_x.py` and re-export their public names "
        "from the package's `__init__`, or add them to PUBLIC_MODULES with why"
    )


def test_every_allowed_public_module_exists():
    assert sorted(set(PUBLIC_MODULES) - set(public_modules(ROOT))) == [], (
        "an allowed public module is gone or private now: drop it from PUBLIC_MODULES"
    )


def test_every_package_is_public_and_has_an_init():
    packages = sorted(
        path.relative_to(ROOT).as_posix()
        for path in ROOT.iterdir()
        if path.is_dir() and path.name != "__pycache__"
    )
    assert [name for name in packages if name.startswith("_")] == []
    assert [name for name in packages if not (ROOT / name / "__init__.py").is_file()] == []


def test_the_check_sees_a_new_public_module(tmp_path):
    root = tmp_path / "cortex_agents"
    for name in (
        "__init__.py",
        "__main__.py",
        "errors.py",
        "_demo.py",
        "runtime/__init__.py",
        "runtime/_wire.py",
        "runtime/helpers.py",
        "_internal/plain.py",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    assert public_modules(root) == ["__main__.py", "errors.py", "runtime/helpers.py"]
