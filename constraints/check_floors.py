"""Check that a venv runs on the floors: every pin of floors.txt installed, and equal to pyproject's bound.

Usage: ``python constraints/check_floors.py constraints/floors.txt`` (run by
``.ci/run`` in the floors venv). Exits 1 naming each mismatch:

* a package pinned in floors.txt whose installed version differs (pip did
  not install the floor, so the suite would not test it);
* a dependency whose ``>=`` lower bound in pyproject.toml is not its pin in
  floors.txt, or a dependency with a lower bound and no pin (the two files
  drifted apart).
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_REQUIREMENT = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(.*)$")


def canonical(name: str) -> str:
    """A distribution name as pip compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """``name -> version`` of each ``name==version`` line (comments and blanks skipped)."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            found[canonical(name)] = pinned.strip()
    return found


def lower_bounds() -> dict[str, str]:
    """``name -> version`` of each ``>=`` bound in the dependencies and extras (not ``dev``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra, listed in project.get("optional-dependencies", {}).items():
        if extra != "dev":
            requirements += listed
    bounds = {}
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            continue
        floor = re.search(r">=\s*([^,\s;]+)", match.group(2))
        if floor:
            bounds[canonical(match.group(1))] = floor.group(1)
    return bounds


def main(argv: list[str]) -> int:
    floors = pins(Path(argv[1]))
    problems = []
    for name, pinned in sorted(floors.items()):
        try:
            installed = version(name)
        except PackageNotFoundError:
            problems.append(f"{name}: pinned {pinned}, not installed")
            continue
        if installed != pinned:
            problems.append(f"{name}: pinned {pinned}, installed {installed}")
    for name, bound in sorted(lower_bounds().items()):
        if floors.get(name) != bound:
            problems.append(
                f"{name}: pyproject.toml says >={bound}, floors.txt pins {floors.get(name)}"
            )
    for problem in problems:
        print(f"floors: {problem}", file=sys.stderr)
    if not problems:
        print(f"floors: {len(floors)} pins installed and equal to pyproject.toml's lower bounds")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
