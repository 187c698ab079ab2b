"""The command line starts without what its commands need: commands load when they run."""

from __future__ import annotations

import subprocess
import sys

import typer.main
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.cli._app import COMMANDS, load_commands

# What `--help` must not pull in: the runtime's and the tools' heavy dependencies.
HEAVY = ("langgraph", "langchain_core", "langsmith", "tiktoken", "cortex_agents.runtime")

PROBE = """
import contextlib, io, sys
sys.argv = ["cortex-agents", "--help"]
from cortex_agents.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main()
    except SystemExit:
        pass
print(sorted(m for m in {heavy!r} if m in sys.modules))
print("export" in out.getvalue() and "memory" in out.getvalue())
"""


def test_help_lists_every_command_without_importing_langgraph_or_the_runtime():
    probe = PROBE.format(heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    imported, listed = done.stdout.strip().splitlines()
    assert imported == "[]"
    assert listed == "True"


def test_the_listed_summaries_are_the_commands_own():
    load_commands()
    group = typer.main.get_command(app)
    for name, (_, summary) in COMMANDS.items():
        command = group.commands[name]
        assert (command.help or "").split("\n\n")[0].strip() == summary, name


def test_a_command_runs_and_shows_its_own_help_through_the_lazy_group():
    result = CliRunner().invoke(app, ["memory", "query", "--help"])
    assert result.exit_code == 0 and "--origin" in result.output
    result = CliRunner().invoke(app, ["nope"])
    assert result.exit_code == 2 and "No such command" in result.output
