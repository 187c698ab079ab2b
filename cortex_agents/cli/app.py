"""The typer application and its error boundary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from cortex_agents.errors import CortexError

__all__ = ["app", "fail_cleanly", "main", "memory_app", "stderr", "stdout", "write_output"]

app = typer.Typer(
    name="cortex-agents",
    help="Graph memory for LangGraph agents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
memory_app = typer.Typer(help="Query memory.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def fail_cleanly() -> Iterator[None]:
    """Turn a :class:`CortexError` into its message on stderr and exit code 1."""
    try:
        yield
    except CortexError as exc:
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


def main() -> None:
    """Console entry point."""
    app()
