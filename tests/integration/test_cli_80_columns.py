"""The command line in an 80-column terminal: nothing wider, no id, time or command cut.

The commands run in a subprocess with ``COLUMNS=80``, which is how the CLI's
rich consoles learn the terminal's width. The demo's view is also checked on
a run made here with a scripted model (no cassette), so it holds whatever
the recordings say.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from cortex_agents._demo import SCENARIOS
from cortex_agents.cli import _demo_view as view
from cortex_agents.cli import app
from cortex_agents.cli._app import COMMANDS
from cortex_agents.cli._narrow import command_lines
from cortex_agents.cli._run_cmd import _Printer
from cortex_agents.persistence import memory_saver
from cortex_agents.runtime import Runtime, TickingClock, load_wire
from tests.integration.test_llm_stages import model
from tests.support.chat import call, say
from tests.support.helpers import T0

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
THREAD = "claim-review-imported-2026-01-01-run-0001"  # 41 characters: a table cell would cut it


def cli(*args: object, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run(
        [sys.executable, "-m", "cortex_agents", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def widest(out: str) -> int:
    return max(len(line) for line in out.splitlines())


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("narrow") / "runs.db"
    cli("import", EXAMPLE, db, "--thread", THREAD)
    return db


def words(out: str) -> set[str]:
    return {w.strip(",:'()") for w in out.split()}


def test_inspect_fits_80_columns_and_prints_every_id_and_time_whole(database):
    listing = cli("inspect", database)
    assert widest(listing) <= 80
    threads = json.loads(cli("inspect", database, "--json"))
    assert THREAD in words(listing)
    assert threads[0]["last_event_at"] in words(listing)
    detail = cli("inspect", database, "--thread", THREAD)
    assert widest(detail) <= 80
    described = json.loads(cli("inspect", database, "--thread", THREAD, "--json"))
    for node in described["nodes"]:
        assert node["id"] in words(detail)
        for stamp in (node["captured_at"], node["completed_at"]):
            assert stamp is None or stamp in words(detail), stamp
    assert "…" not in detail and "…" not in listing  # nothing cut with an ellipsis
    for edge in described["edges"]:
        assert f"{edge['source']} -> {edge['target']}" in " ".join(detail.split())


def test_inspect_on_a_wide_terminal_is_a_table_with_a_row_per_node(database):
    detail = cli("inspect", database, "--thread", THREAD, columns=120)
    described = json.loads(cli("inspect", database, "--thread", THREAD, "--json"))
    planner = described["nodes"][0]
    row = [planner["id"], planner["kind"], planner["status"], str(planner["attempts"])]
    row += [planner["captured_at"], planner["completed_at"]]
    assert row in [line.split() for line in detail.splitlines()]


@pytest.mark.parametrize("source", ["file", "database"])
def test_memory_query_fits_80_columns_with_ids_and_scores_whole(source, database):
    where = [EXAMPLE] if source == "file" else [database, "--thread", THREAD]
    args = ["memory", "query", *where, "--origin", "reviewer", "--text", "remote work"]
    out = cli(*args)
    assert widest(out) <= 80
    ranked = json.loads(cli(*args, "--json"))
    assert ranked
    rows = [line.split() for line in out.splitlines()]
    for rank, m in enumerate(ranked, 1):
        scores = [f"{m[a]:.3f}" for a in ("score", "graph", "temporal", "semantic")]
        assert any(r[:2] == [str(rank), m["node_id"]] and r[3:8] == [str(m["hops"]), *scores]
                   for r in rows), m  # fmt: skip
    text = " ".join(out.split())
    assert "memory of 'reviewer' at 2026-01-01T00:10:00Z" in text  # the reference time, whole
    assert "hops = edges from reviewer; graph = 1/(1 + hops); key = the branch" in text
    assert "near-tie" in text or "mostly on the" in text


@pytest.mark.parametrize(
    "command", [*([c] for c in COMMANDS if c != "memory"), ["memory", "query"]]
)
def test_help_shows_no_type_on_a_flag(command):
    result = CliRunner().invoke(app, [*command, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "--help" in result.output


def test_help_still_shows_the_type_of_an_option_that_takes_a_value():
    out = CliRunner().invoke(app, ["inspect", "--help"], terminal_width=80).output
    (json_line,) = [line for line in out.splitlines() if "--json" in line]
    (thread_line,) = [line for line in out.splitlines() if "--thread" in line]
    # typer names the type <str> (0.29) or TEXT (0.26, the floor); a flag shows none
    assert ("<str>" in thread_line or "TEXT" in thread_line) and "<" not in json_line
    assert "TEXT" not in json_line and "BOOLEAN" not in json_line
    assert CliRunner().invoke(app, ["--help"]).output.count("<bool>") == 0


@pytest.fixture(scope="module")
def scripted_run():
    """The claim-review wire run here, its model scripted: a real RunResult, no LLM; and the
    progress lines the demo's printer wrote while it ran."""
    reviewer = [
        call("cortex_memory_query", {"query_text": "selection bias"}),
        say(json.dumps({"verdict": "gap", "gaps": ["no trial for c2"], "cited": ["analyst-b"]})),
    ]
    wire = load_wire("graphs/claim_review.py")
    runtime = Runtime(
        wire,
        memory_saver(),
        clock=TickingClock(T0, timedelta(seconds=1)),
        services={"chat_model": model(reviewer)},
    )
    with contextlib.redirect_stdout(io.StringIO()) as progress:
        result = runtime.run("demo-run", {"claim": "X"}, on_progress=_Printer(replayed=True))
    return wire, result, progress.getvalue()


def rendered(blocks) -> str:
    file = io.StringIO()
    console = Console(file=file, width=80, highlight=False, soft_wrap=True, color_system=None)
    view.print_blocks(console, blocks)
    return file.getvalue()


def test_the_demo_view_of_a_run_fits_80_columns_and_explains_its_columns(scripted_run):
    wire, result, progress = scripted_run
    assert not re.search(r"\d\.\d\ds\)", progress)  # a replay shows no time
    assert "✓ planner (planner, replayed)" in progress
    out = rendered(
        [
            view.stage_table(result, wire),
            *view.tool_call_blocks(result, wire.presets),
            *view.report_panels(result),
            view.closing_panel(
                [(result, wire, "demo-run")], view.forced_lines(SCENARIOS["claim_review"])
            ),
        ]
    )
    assert widest(out) <= 80
    assert "hops = edges from reviewer; graph = 1/(1 + hops); key = the branch (routing key)" in out
    assert "tempo = temporal (recency); seman = semantic (text match)" in out
    assert "near-tie" in out or "mostly on the" in out
    assert "Next" not in out and "cortex-agents" not in out  # the commands are not in the box


@pytest.mark.parametrize("db", ["demo.db", "/tmp/a folder with a long name/for the demo/runs.db"])
def test_the_next_commands_print_whole_and_paste_back_as_themselves(scripted_run, db):
    _, result, _ = scripted_run
    commands = view.next_commands(result, db=db, thread="demo-run")
    assert commands[0] == ["cortex-agents", "inspect", db, "--thread", "demo-run"]
    assert commands[1][-4:] == ["--as-seen-by", "reviewer", "-o", "seen.json"]
    for argv in commands:
        lines = command_lines(argv, 80)
        assert all(len(line) <= 80 for line in lines)
        assert shlex.split("\n".join(lines).replace("\\\n", " ")) == argv
