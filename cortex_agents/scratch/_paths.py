"""Scratch-memory paths: what a valid path is, and its one normal form.

A path is absolute and made of segments separated by ``/``. Parsing
collapses repeated slashes and drops a trailing slash, so ``//notes///todo/``
and ``/notes/todo`` are the same path; the normal form is the second one.
Everything else that is not plainly a path is rejected with
:class:`~cortex_agents.errors.InvalidMemoryPath`, whose ``rule`` says what
is allowed. The checks run in a fixed order so the message names the most
specific rule:

1. the path is a string, not empty, at most :data:`MAX_PATH_CHARS` characters;
2. no NUL, no control character (newline, tab, ...), no backslash, no ``%``
   (percent-encoding is never decoded), no ``$``, no ``..`` anywhere;
3. ASCII only: full-width letters, Arabic-Indic digits and the like are
   refused by name, because ``\\w`` and ``str.isalnum`` would accept them;
4. it starts with ``/``;
5. the root ``/`` alone is accepted only where the caller allows it (``list``);
6. at most :data:`MAX_DEPTH` segments, each at most :data:`MAX_SEGMENT_CHARS`
   characters, not starting or ending with a space or a ``.``, and matching
   :data:`SEGMENT_PATTERN` with :func:`re.fullmatch` (``re.match`` with ``$``
   would let a trailing newline through).

A ``.`` may stand between other characters of a segment, so file names with
an extension (``/memories/notes.md``, ``/v1.2/plan.txt``) are paths; a
leading ``.`` (hidden files, ``.`` and ``..``) and a trailing one are not.
The store keys a file by its normal form itself, never by a dotted form, so
``/a.b`` (a file named ``a.b``) and ``/a/b`` (a file ``b`` in directory
``a``) are different paths with different keys and can exist side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cortex_agents.errors import InvalidMemoryPath

__all__ = [
    "MAX_DEPTH",
    "MAX_PATH_CHARS",
    "MAX_SEGMENT_CHARS",
    "ROOT",
    "SEGMENT_PATTERN",
    "MemoryPath",
    "parse_path",
]

MAX_PATH_CHARS: Final = 512
"""Longest path accepted, counted on the path as given (before normalisation)."""

MAX_SEGMENT_CHARS: Final = 64
"""Longest segment (the part between two slashes)."""

MAX_DEPTH: Final = 16
"""Most segments in one path."""

SEGMENT_PATTERN: Final = r"[A-Za-z0-9_ -]+(\.[A-Za-z0-9_ -]+)*"
"""Every segment must match this, in full: ASCII letters, digits, ``_``, space and
``-``, with single dots between them (``notes.md``). ASCII by construction: no ``\\w``."""

_SEGMENT_RE: Final = re.compile(SEGMENT_PATTERN)
_ALLOWED_SEGMENT: Final = (
    f"segments must match `{SEGMENT_PATTERN}` (ASCII letters, digits, `_`, space, `-`, "
    "and `.` between them, as in `notes.md`)"
)
_ROOT_RULE: Final = (
    "`/` is the root directory, which only `list` accepts; name a file or directory "
    "below it, like `/notes`"
)


def _fail(path: str, rule: str) -> InvalidMemoryPath:
    return InvalidMemoryPath(path, rule)


def _segment_rule(segment: str) -> str | None:
    """The rule ``segment`` breaks, or None when it is a valid segment."""
    if len(segment) > MAX_SEGMENT_CHARS:
        return (
            # Quoted cut: a segment this long would fill the model's error result.
            f"segment {segment[:16]!r}... is {len(segment)} characters long; "
            f"the limit is {MAX_SEGMENT_CHARS}"
        )
    if segment in {".", ".."}:
        return f"segment {segment!r} is not allowed: there is no `.` or `..` navigation"
    if segment != segment.strip(" "):
        return f"segment {segment!r} must not start or end with a space"
    if segment.startswith(".") or segment.endswith("."):
        return (
            f"segment {segment!r} must not start or end with `.`; a dot goes between "
            "other characters, as in `notes.md`"
        )
    if _SEGMENT_RE.fullmatch(segment) is None:
        return f"segment {segment!r} is not allowed: {_ALLOWED_SEGMENT}"
    return None


def _character_rule(raw: str) -> str | None:
    """The rule a character of ``raw`` breaks, or None when every character may appear."""
    # NUL gets a rule of its own, ahead of the control characters: the path is a
    # store key, and Postgres text cannot hold NUL at all.
    if "\x00" in raw:
        return "must not contain NUL (U+0000)"
    for char in raw:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            name = "a newline" if char in "\r\n" else "a control character"
            return f"must not contain {name} ({char!r}, U+{ord(char):04X})"
    if "\\" in raw:
        return "must not contain a backslash; separate segments with `/`"
    if "%" in raw:
        return "must not contain `%`: percent-encoding is not decoded, write the characters"
    if "$" in raw:
        return "must not contain `$`"
    if ".." in raw:
        return "must not contain `..`: there is no parent-directory traversal"
    for char in raw:
        if ord(char) > 0x7F:
            return (
                f"must be ASCII: character {char!r} (U+{ord(char):04X}) is not allowed; "
                f"{_ALLOWED_SEGMENT}"
            )
    return None


@dataclass(frozen=True, slots=True)
class MemoryPath:
    """A valid, normalised scratch-memory path.

    Build one with :func:`parse_path`; constructing it directly checks the
    segments too, so an invalid ``MemoryPath`` cannot exist.

    Attributes:
        segments: The names between slashes, root first; empty for the root.
    """

    segments: tuple[str, ...]

    def __post_init__(self) -> None:
        text = "/" + "/".join(self.segments)
        if len(self.segments) > MAX_DEPTH:
            raise _fail(text, f"is {len(self.segments)} levels deep; the limit is {MAX_DEPTH}")
        for segment in self.segments:
            rule = _segment_rule(segment)
            if rule is not None:
                raise _fail(text, rule)

    @property
    def text(self) -> str:
        """The normal form, e.g. ``"/notes/todo"``; ``"/"`` for the root."""
        return "/" + "/".join(self.segments)

    @property
    def is_root(self) -> bool:
        """Whether this is the root directory ``/``."""
        return not self.segments

    @property
    def name(self) -> str:
        """The last segment; ``""`` for the root."""
        return self.segments[-1] if self.segments else ""

    @property
    def ancestors(self) -> tuple[MemoryPath, ...]:
        """The directories above this path, outermost first, root excluded."""
        return tuple(MemoryPath(self.segments[:n]) for n in range(1, len(self.segments)))

    def child_prefix(self) -> str:
        """The key prefix every path strictly below this one starts with."""
        return "/" if self.is_root else self.text + "/"

    def __str__(self) -> str:
        return self.text


ROOT: Final = MemoryPath(())
"""The root directory ``/``."""


def parse_path(raw: object, *, allow_root: bool = False) -> MemoryPath:
    """Validate ``raw`` and return its normal form.

    Args:
        raw: The path as the caller (or the model) wrote it.
        allow_root: Whether ``/`` alone is acceptable. Only ``list`` allows
            it; a file operation or a delete must name something below the
            root.

    Returns:
        The normalised path.

    Raises:
        InvalidMemoryPath: ``raw`` breaks a rule; ``.rule`` names it.
    """
    if isinstance(raw, MemoryPath):
        if raw.is_root and not allow_root:
            raise _fail(raw.text, _ROOT_RULE)
        return raw
    if not isinstance(raw, str):
        raise _fail(repr(raw), f"must be a string, not {type(raw).__name__}")
    if not raw:
        raise _fail(raw, "must not be empty; paths are absolute, like `/notes/todo`")
    if len(raw) > MAX_PATH_CHARS:
        raise _fail(raw, f"is {len(raw)} characters long; the limit is {MAX_PATH_CHARS} characters")
    rule = _character_rule(raw)
    if rule is not None:
        raise _fail(raw, rule)
    if not raw.startswith("/"):
        raise _fail(raw, "must be absolute: start with `/`, like `/notes/todo`")
    segments = tuple(segment for segment in raw.split("/") if segment)
    if not segments and not allow_root:
        raise _fail(raw, _ROOT_RULE)
    try:
        return MemoryPath(segments)  # checks depth and every segment
    except InvalidMemoryPath as error:
        raise _fail(raw, error.rule) from None  # name the path as the caller wrote it
