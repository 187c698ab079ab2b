"""``cortex-agents graph``: draw a thread's materialized graph (Mermaid, HTML or PNG).

PNG needs pillow, the ``[png]`` extra; without it ``--format png`` exits 1
with the command that installs it, and the other formats work as ever.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cortex_agents.cli._app import app, fail_cleanly, stdout, write_output
from cortex_agents.cli._db_cmds import DbArgument, ThreadOption, open_database
from cortex_agents.persistence._inspection import thread_log
from cortex_agents.picture import Picture, layout, picture_of, to_html, to_mermaid

__all__ = ["Format", "default_output", "graph"]


class Format(StrEnum):
    """The picture formats."""

    mermaid = "mermaid"
    png = "png"
    html = "html"


def default_output(thread: str, fmt: Format) -> Path:
    """``<thread>.<ext>`` in the current directory (characters unsafe in a file name become ``_``)."""
    # Leading dots stripped: a thread named `.x` must not write a hidden file.
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", thread).lstrip(".") or "graph"
    return Path(f"{stem}.{fmt.value}")


def _load(db: str, thread: str) -> Picture:
    with open_database(db) as saver:
        return picture_of(thread_log(saver, thread).state, title=f"thread {thread}")


@app.command("graph")
def graph(
    db: DbArgument,
    thread: ThreadOption,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="mermaid (text), png or html.")
    ] = Format.mermaid,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="The file to write (mermaid: stdout by default; png/html: <thread>.<ext>).",
        ),
    ] = None,
) -> None:
    """Draw a thread's graph: status per node, rewrite-added and retired nodes, rejected proposals."""
    with fail_cleanly():
        picture = _load(db, thread)
    # Laid out once: every format draws the same node order.
    shape = layout(picture)
    if fmt is Format.mermaid and output is None:
        # Plain print: rich would wrap long lines and read `[...]` in labels as markup.
        print(to_mermaid(picture, shape), end="")
        return
    target = output if output is not None else default_output(thread, fmt)
    if fmt is Format.png:
        with fail_cleanly():  # pillow is the [png] extra: without it, say how to install it
            from cortex_agents.picture._png import to_png
        data: bytes | str = to_png(picture, shape)
    elif fmt is Format.html:
        data = to_html(picture, shape)
    else:
        data = to_mermaid(picture, shape)
    write_output(target, data)
    stdout.print(
        f"wrote the {fmt.value} graph of {thread!r} to {target} ({len(picture.nodes)} nodes, "
        f"admitted rewrites: {len(picture.admitted)}, rejected proposals: {len(picture.rejected)})",
        markup=False,
    )
