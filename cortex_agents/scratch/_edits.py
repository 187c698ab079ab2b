"""Line-based text edits of scratch-memory files: pure functions, no store.

The file-memory commands models already know (``view`` with line numbers,
``insert`` at a line, ``str_replace`` with a unique match) need one shared
idea of what a line is, so the numbers ``view`` shows are the numbers
``insert`` takes:

- a file's lines are its text split at ``\\n``; a final ``\\n`` ends the last
  line rather than starting an empty one, so ``"a\\nb\\n"`` and ``"a\\nb"``
  both have 2 lines and ``""`` has none;
- lines are numbered from 1; ``insert_line`` ``k`` puts the new text after
  line ``k``, so 0 is the top of the file and the line count is its end;
- an edit keeps the file's final newline: a file that ended with one still
  does, and one that did not still does not, unless the new text is added at
  the end and itself ends with a newline.

Each function returns the new text or raises
:class:`~cortex_agents.errors.InvalidArgument` naming the field (``old_str``,
``insert_line``, ``view_range``) and the rule; none of them touches storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cortex_agents.errors import InvalidArgument

__all__ = ["LINE_NUMBER_WIDTH", "insert_lines", "number_lines", "replace_once", "split_lines"]

LINE_NUMBER_WIDTH: Final = 6
"""Line numbers in ``view`` are right-aligned to this width, then a tab."""


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` (see the module docstring): ``"a\\nb\\n"`` -> ``["a", "b"]``."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _quote(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def replace_once(text: str, old: str, new: str, *, path: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced by ``new``.

    Args:
        text: The file's content.
        old: The text to find; it must occur exactly once.
        new: The replacement (may be empty, which deletes ``old``).
        path: The file's path, for the error message.

    Raises:
        InvalidArgument: ``old_str`` occurs 0 times or more than once; the
            message gives the count and what to do instead.
    """
    count = text.count(old)
    if count == 1:
        return text.replace(old, new, 1)
    if count == 0:
        rule = (
            f"must occur exactly once in {path!r}, but occurs 0 times; nothing was replaced. "
            "`view` the file and copy the text exactly, whitespace included"
        )
    else:
        rule = (
            f"must occur exactly once in {path!r}, but occurs {count} times; nothing was "
            "replaced. Include more of the surrounding text so it matches once, or use "
            "`update` to replace every occurrence"
        )
    raise InvalidArgument("old_str", rule, _quote(old))


def insert_lines(text: str, line: int, new_text: str, *, path: str) -> str:
    """``text`` with ``new_text`` inserted after line ``line`` (0: at the top).

    Args:
        text: The file's content.
        line: How many lines of the file come before the new text, from 0 to
            the file's line count.
        new_text: The text to insert, one or more lines; a final newline in
            it is dropped unless it goes at the end of the file.
        path: The file's path, for the error message.

    Raises:
        InvalidArgument: ``insert_line`` is not an integer in that range.
    """
    lines = split_lines(text)
    if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line <= len(lines):
        raise InvalidArgument(
            "insert_line",
            f"must be an integer from 0 (the top) to {len(lines)} (after the last line of "
            f"{path!r}, which has {len(lines)} line{'s' * (len(lines) != 1)})",
            line,
        )
    # A lone newline has no lines by split_lines' rule; it still inserts one empty line.
    added = split_lines(new_text) or [""]
    joined = "\n".join([*lines[:line], *added, *lines[line:]])
    at_end = line == len(lines)
    ends_with_newline = text.endswith("\n") or (at_end and new_text.endswith("\n"))
    return joined + "\n" if ends_with_newline else joined


def number_lines(text: str, view_range: Sequence[int] | None = None, *, path: str) -> str:
    """``text`` as numbered lines, each ``<number right-aligned>\\t<line>``.

    Args:
        text: The file's content.
        view_range: ``[first, last]``, 1-based and inclusive; ``last`` may be
            -1 for "to the end". None shows every line.
        path: The file's path, for the error message.

    Returns:
        The numbered lines joined by newlines; ``"(empty file)"`` when the
        file has no line.

    Raises:
        InvalidArgument: ``view_range`` is not two integers inside the file.
    """
    lines = split_lines(text)
    first, last = 1, len(lines)
    if view_range is not None:
        first, last = _check_range(view_range, len(lines), path)
    if not lines:
        return "(empty file)"
    return "\n".join(
        f"{number:>{LINE_NUMBER_WIDTH}}\t{lines[number - 1]}" for number in range(first, last + 1)
    )


def _check_range(view_range: Sequence[int], count: int, path: str) -> tuple[int, int]:
    values = list(view_range) if isinstance(view_range, list | tuple) else None
    if (
        values is None
        or len(values) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in values)
    ):
        raise InvalidArgument(
            "view_range", "must be two integers `[first, last]` (last -1: to the end)", view_range
        )
    first, last = values
    if count == 0 and values == [1, -1]:
        return 1, 0  # the whole of an empty file
    last = count if last == -1 else last
    if not 1 <= first <= max(count, 1) or not first <= last <= count:
        raise InvalidArgument(
            "view_range",
            f"must lie within the {count} line{'s' * (count != 1)} of {path!r}: "
            f"1 <= first <= last <= {count}, or last -1 for the end",
            list(view_range),
        )
    return first, last
