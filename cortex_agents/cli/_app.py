"""The typer application and its error boundary.

Commands load lazily: ``cortex-agents --help`` lists every command from
:data:`COMMANDS` without importing one, and a command's module (with the
runtime, LangGraph, the memory engine it needs) is imported only when that
command runs or shows its own help. So start-up costs only what the command
in hand uses.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import typer
import typer.main
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

from cortex_agents.errors import CortexError

if TYPE_CHECKING:
    # TyperGroup's own Context and Command: typer (>= 0.26) runs a private copy of click,
    # so the click package's classes (when it is installed at all) are not these.
    from typer._click import Command, Context

__all__ = [
    "COMMANDS",
    "app",
    "fail_cleanly",
    "load_commands",
    "main",
    "memory_app",
    "stderr",
    "stdout",
    "write_output",
]

COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "export": ("db_cmds", "Write a thread's substrate as a snapshot file."),
    "import": (
        "db_cmds",
        "Import a snapshot file as a new thread (strict: an invalid file writes nothing).",
    ),
    "inspect": ("db_cmds", "List a database's threads, or one thread's nodes, edges and rewrites."),
    "run": (
        "run_cmd",
        "Run a wire on a thread until nothing is runnable (resuming it if it exists).",
    ),
    "demo": (
        "demo_cmd",
        "Run the claim-review workflow from its recorded LLM exchanges: no key, no network.",
    ),
    "graph": (
        "graph_cmd",
        "Draw a thread's graph: status per node, rewrite-added and retired nodes, "
        "rejected proposals.",
    ),
    "validate": (
        "validate_cmd",
        "Check a snapshot file, or a database's stored threads; list every problem with its "
        "location.",
    ),
    "memory": ("memory_cmd", "Query memory."),
}
"""Each command: the module under ``cortex_agents.cli`` that registers it, and its summary."""


def load_commands(*names: str) -> None:
    """Import the modules that register these commands (every command when none is named)."""
    for name in names or tuple(COMMANDS):
        importlib.import_module(f"cortex_agents.cli._{COMMANDS[name][0]}")


def _hide_flag_types(command: Command, ctx: Context) -> None:
    """Show no value type for a flag: it takes no value.

    typer (0.29) prints every option's type in help, so a flag read
    ``--json <bool>``, as if it wanted a value. An empty metavar is what its
    help prints instead; parsing does not read a flag's metavar.
    """
    for param in command.get_params(ctx):  # the --help option included
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class _Group(TyperGroup):
    """A group whose help, and its commands' help, show no type on flags."""

    def format_help(self, ctx: Context, formatter: Any) -> None:
        _hide_flag_types(self, ctx)
        super().format_help(ctx, formatter)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _hide_flag_types(command, ctx)
        return name, command, rest


class _LazyGroup(_Group):
    """A group that lists commands from :data:`COMMANDS` and imports one only to run it."""

    def list_commands(self, ctx: Context) -> list[str]:
        # COMMANDS' order, not click's alphabetical one: help lists commands by job.
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            summary = COMMANDS[cmd_name][1]
            return TyperCommand(cmd_name, help=summary, short_help=summary)  # for listings
        return command

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name = args[0] if args else None
        if name in COMMANDS:
            load_commands(name)
            # The module just registered its command on the typer `app`, not on this
            # click group (built before the import): rebuild the group to fetch it.
            self.commands[name] = typer.main.get_group(app).commands[name]
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="cortex-agents",
    help="Graph memory for LangGraph agents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=_LazyGroup,
)
memory_app = typer.Typer(help="Query memory.", no_args_is_help=True, cls=_Group)
app.add_typer(memory_app, name="memory")


def _print_version(asked: bool) -> None:
    if asked:
        from cortex_agents import __version__

        typer.echo(f"cortex-agents {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the installed version and exit.",
    ),
) -> None:
    """Graph memory for LangGraph agents."""


# No highlighting (it would colour numbers inside ids), and soft wrap so a
# long line is folded by the terminal, never broken with a newline a copy keeps.
stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def fail_cleanly() -> Iterator[None]:
    """Turn a :class:`CortexError` into its message on stderr and exit code 1."""
    try:
        yield
    except CortexError as exc:
        # markup=False: messages quote values like `['a']`, which rich would read as markup.
        stderr.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from None


def write_output(target: Path, data: str | bytes) -> None:
    """Write a command's output file, or exit 1 with one message (missing folder, a directory...)."""
    try:
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data, encoding="utf-8")
    except OSError as exc:
        stderr.print(f"error: cannot write {str(target)!r}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(1) from None


def main() -> Any:
    """Console entry point."""
    # A command is one short process that builds large structures (a 100k-node file is
    # millions of objects, few of them garbage): the default collector's thresholds made
    # a third of reading such a file rescans of live objects (measured: 9.2 s -> 6.4 s of
    # CPU). Collect rarely instead, as mypy does; cycles are still collected.
    gc.set_threshold(100_000, 50, 100)
    return app()
