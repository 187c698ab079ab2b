"""Printing for a narrow terminal: wrap at chosen places, never cut an id, a time or a command.

Rich wraps text at any space and cuts table cells with an ellipsis when a
table is wider than the terminal. What a person copies — a thread id, a
timestamp, a command — must survive both, so the commands print their
output through these helpers instead:

- :func:`wrap` breaks a line only between the units it is given (a field
  ``name value``, an arrow and the step after it), with a hanging indent;
- :func:`print_table` prints a borderless table when every cell fits whole
  on one line, and otherwise the same rows as records (the first column on
  its line, then ``header value`` fields wrapped between fields);
- :func:`command_lines` prints a shell command whole on one line, or, if it
  is wider than the terminal, across lines joined by ``\\`` continuations,
  which a shell reads back as the one command (arguments are shell-quoted).
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["chain", "command_lines", "print_lines", "print_table", "wrap"]

_GLUE = "\u00a0"
"""Joins the words of one unit: textwrap breaks at ASCII whitespace only, never at a no-break space."""


def wrap(
    units: Sequence[str], width: int, *, sep: str = " ", indent: str = "  ", first: str = ""
) -> list[str]:
    """``units`` joined by ``sep`` in lines of at most ``width``, broken only between units.

    A unit wider than a line is broken at its spaces, then (only if a single
    word is wider than the line) inside the word. Continuation lines start
    with ``indent``; the first with ``first``.
    """
    glued = sep.join(u.replace(" ", _GLUE) for u in units)
    lines = textwrap.wrap(
        glued,
        # textwrap refuses a width not wider than the indent; a tiny console still
        # gets 8 characters a line.
        width=max(width, len(indent) + 8),
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    )
    if any(len(line) > width for line in lines):  # a unit alone is wider than a line
        lines = textwrap.wrap(
            sep.join(units), width=width, initial_indent=first, subsequent_indent=indent
        )
    # textwrap returns no line for empty text; the caller still prints one.
    return [line.replace(_GLUE, " ") for line in lines] or [first.rstrip()]


def chain(text: str, width: int, *, indent: str = "  ") -> list[str]:
    """``a -> b -> c`` wrapped before an arrow, so an arrow always leads its step."""
    steps = text.split(" -> ")
    return wrap([steps[0], *(f"-> {s}" for s in steps[1:])], width, indent=indent)


def print_lines(console: Console, lines: Sequence[str], style: str | None = None) -> None:
    """Print lines as they are: already wrapped, so the console must not wrap them again."""
    for line in lines:
        console.print(Text(line, style=style or ""), soft_wrap=True)


def print_table(
    console: Console,
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: frozenset[str] = frozenset(),
) -> None:
    """A table with every cell whole on one line if it fits the console, else records."""
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_edge=False,
    )
    for header in headers:
        table.add_column(header, no_wrap=True, justify="right" if header in right else "left")
    for row in rows:
        table.add_row(*row)
    unbounded = console.options.update_width(1_000_000)  # a table measures within its width
    if console.measure(table, options=unbounded).maximum <= console.width:
        console.print(table, soft_wrap=False)
        return
    print_lines(console, wrap([title], console.width))
    for row in rows:
        fields = [f"{h} {v}" for h, v in zip(headers[1:], row[1:], strict=True) if v]
        print_lines(console, wrap([row[0]], console.width))
        print_lines(console, wrap(fields, console.width, sep=", ", indent="    ", first="    "))


def command_lines(argv: Sequence[str], width: int, *, indent: str = "  ") -> list[str]:
    """A command to copy: one line, or ``\\``-continued lines if wider than ``width``.

    An option stays on the line of its value; an argument wider than a line
    is never split (a split argument is a different command).
    """
    words = [shlex.quote(a) for a in argv]
    units: list[str] = []
    for word in words:
        if (
            units
            and units[-1].startswith("-")
            # An option already joined with its value takes no second one.
            and " " not in units[-1]
            and not word.startswith("-")
        ):
            units[-1] += f" {word}"  # an option and its value
        else:
            units.append(word)
    if len(indent) + len(" ".join(words)) <= width:
        return [indent + " ".join(words)]
    lines = [indent + units[0]]
    for i, unit in enumerate(units[1:], 2):
        room = 0 if i == len(units) else 2  # for the " \\" of a line that another follows
        if len(lines[-1]) + 1 + len(unit) + room <= width:
            lines[-1] += f" {unit}"
        else:
            lines[-1] += " \\"
            lines.append(f"{indent}    {unit}")
    return lines
