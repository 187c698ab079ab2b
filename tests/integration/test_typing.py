"""The package is typed: ``mypy --strict`` passes on it and on a user's script of its public API.

``tests/typing/user_script.py`` is what an application writes (a wire, the
runtime, memory queries with presets, scorers and projections, snapshot files,
``stage_node`` on a wrapped LangGraph saver, the memory tool in a ``ToolNode``
graph), with annotations. It is checked with the package, so a public
signature that stops saying what the code does fails here; and it is run, so
the script cannot rot into code that type-checks but no longer works.

mypy keeps its cache in the system's temporary folder (one per venv): a warm
run takes a second or two, a cold one ~15 s on two cores.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "typing" / "user_script.py"


def _cache_dir() -> Path:
    venv = hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"cortex-agents-mypy-{venv}"


def test_mypy_strict_passes_on_the_package_and_a_users_script():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(_cache_dir()),
            "cortex_agents",
            str(SCRIPT.relative_to(ROOT)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success: no issues found"), result.stdout


def test_the_users_script_runs():
    result = subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "user script: ok", result.stdout
