"""Bounds on what a snapshot file may hold, enforced once where the file enters.

A file comes from outside: before anything is built from it, its size, its
nesting depth, every number literal, every string and every count is checked
against :class:`SnapshotLimits`. ``validate``, strict ``import`` and forensic
``import`` all read through here, so they accept exactly the same files, and
no file can make a reader recurse without bound, parse a 5,000-digit number,
or expand a small file into millions of events.

The bounds of a value (a node's ``output``, a rewrite's ``proposal``, an
id, a string, tags, attempts) are the substrate's own
(:mod:`cortex_agents.substrate._bounds`, and
:func:`~cortex_agents.substrate._events.storable_json`: 64-bit integers, finite
floats, no lone surrogates, at most
:data:`~cortex_agents.substrate._events.MAX_DEPTH` levels): a run refuses what
exceeds them where the value enters, so whatever a run stores, a file can
carry, and the reverse. The counts and the size of a whole file (nodes,
edges, events, bytes) bound what one file may hold; ``export`` checks its file
with this very reader and writes nothing a later ``import`` would refuse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final

from cortex_agents.errors import InvalidArgument, Problem
from cortex_agents.substrate._bounds import (
    MAX_ATTEMPTS,
    MAX_ID_CHARS,
    MAX_STRING_CHARS,
    MAX_TAGS,
    id_problem,
)
from cortex_agents.substrate._events import MAX_DEPTH

__all__ = [
    "DEFAULT_LIMITS",
    "BadNumber",
    "SnapshotLimits",
    "check_identifier",
    "decode_bounded",
    "identifier_problem",
    "walk_problems",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotLimits:
    """The bounds of a snapshot file (defaults: a value's are the substrate's own, see above).

    Attributes:
        max_bytes: Size of the file.
        max_depth: Nesting of the whole document (a payload nests at most
            ``MAX_DEPTH`` levels inside it).
        max_nodes: Nodes in ``nodes``.
        max_edges: Edges in ``edges``.
        max_rewrites: Decisions in ``rewrites``.
        max_attempts: A node's ``attempts`` (import records one start per attempt).
        max_events: Events an import of the file would write.
        max_id_chars: Length of an id, a kind, a tag or a run id.
        max_tags: Tags of one node.
        max_string_chars: Length of any string.
        max_number_chars: Length of a number literal.
    """

    max_bytes: int = 64 * 2**20
    max_depth: int = MAX_DEPTH + 8
    max_nodes: int = 100_000
    max_edges: int = 500_000
    max_rewrites: int = 10_000
    max_attempts: int = MAX_ATTEMPTS
    max_events: int = 1_000_000
    max_id_chars: int = MAX_ID_CHARS
    max_tags: int = MAX_TAGS
    max_string_chars: int = MAX_STRING_CHARS
    max_number_chars: int = 100


DEFAULT_LIMITS: Final = SnapshotLimits()

_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]+")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class BadNumber:
    """A number literal the file may not hold, kept in its place until it is reported."""

    __slots__ = ("literal", "rule")

    def __init__(self, literal: str, rule: str) -> None:
        self.literal = literal if len(literal) <= 40 else f"{literal[:20]}...({len(literal)} chars)"
        self.rule = rule

    def __repr__(self) -> str:
        return self.literal


def identifier_problem(value: Any, limits: SnapshotLimits = DEFAULT_LIMITS) -> str | None:
    """What is wrong with ``value`` as an id (``None`` when it is a good one).

    An id (node, kind, tag, run, thread) is a non-empty string of at most
    ``max_id_chars`` characters with no control characters and no lone
    surrogates (:func:`~cortex_agents.substrate._bounds.id_problem`).
    """
    return id_problem(value, limits.max_id_chars)


def check_identifier(value: Any, field: str, limits: SnapshotLimits = DEFAULT_LIMITS) -> str:
    """``value`` if it is a good id (see :func:`identifier_problem`).

    Raises:
        InvalidArgument: it is not.
    """
    rule = identifier_problem(value, limits)
    if rule is None and isinstance(value, str):  # it passes strings only
        return value
    shown = value[:60] + "..." if isinstance(value, str) and len(value) > 60 else value
    raise InvalidArgument(field, rule or "must be a string", shown)


def _depth(text: str) -> int:
    """How deeply the JSON text nests (strings skipped), counted without parsing it."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(1 if c in "[{" else -1 for c in brackets), default=0)


def _number_hooks(limits: SnapshotLimits) -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    def parse_int(literal: str) -> Any:
        if len(literal) > limits.max_number_chars:
            return BadNumber(literal, f"has more than {limits.max_number_chars} characters")
        return int(literal)

    def parse_float(literal: str) -> Any:
        if len(literal) > limits.max_number_chars:
            return BadNumber(literal, f"has more than {limits.max_number_chars} characters")
        value = float(literal)
        if value in (float("inf"), float("-inf")):
            return BadNumber(literal, "is out of range (must be a finite 64-bit float)")
        return value

    return parse_int, parse_float


def decode_bounded(text: str, limits: SnapshotLimits = DEFAULT_LIMITS) -> tuple[Any, list[Problem]]:
    """Decode a file's JSON within ``limits``: the value, and the problems of the whole text.

    Problems that make the text unusable (too large, too deep, malformed,
    duplicate keys, ``NaN``) come back with ``None``. Out-of-range numbers
    are left in place as :class:`BadNumber` and located by :func:`walk_problems`.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        return None, [Problem("document", f"is {size} bytes; at most {limits.max_bytes} allowed")]
    depth = _depth(text)
    if depth > limits.max_depth:
        return None, [
            Problem("document", f"nests {depth} levels deep; at most {limits.max_depth} allowed")
        ]
    problems: list[Problem] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                shown = key if len(key) <= 40 else key[:40] + "..."
                problems.append(Problem("document", f"duplicate key {shown!r} in one JSON object"))
            seen[key] = value
        return seen

    def constant(name: str) -> float:
        problems.append(Problem("document", f"{name} is not valid JSON"))
        return 0.0

    parse_int, parse_float = _number_hooks(limits)
    try:
        data = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_constant=constant,
            parse_int=parse_int,
            parse_float=parse_float,
        )
    except json.JSONDecodeError as exc:
        return None, [Problem(f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}")]
    except RecursionError:  # the depth pre-scan is the bound; this is only a safety net
        return None, [Problem("document", "nests too deeply")]
    return (None if problems else data), problems


def walk_problems(value: Any, where: str, limits: SnapshotLimits = DEFAULT_LIMITS) -> list[Problem]:
    """Every bad number, over-long or ill-formed string or key inside ``value``, located.

    Iterative: the cost is the size of ``value``, never the interpreter's stack.
    """
    problems: list[Problem] = []
    stack: list[tuple[Any, str]] = [(value, where)]
    longest = limits.max_string_chars
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            rule = _string_problem(item, limits)
            if rule:
                problems.append(Problem(path, rule))
        elif isinstance(item, BadNumber):
            problems.append(Problem(path, f"number {item.literal} {item.rule}"))
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if not (key.isascii() and len(key) <= longest):
                    rule = _string_problem(key, limits)
                    if rule:
                        problems.append(Problem(path, f"key {key[:40]!r} {rule}"))
                if type(child) is str and child.isascii() and len(child) <= longest:
                    continue  # the common leaf, without a trip through the stack
                stack.append(
                    (child, f"{path}.{key}" if len(key) <= 40 else f"{path}.{key[:40]}...")
                )
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))
    return problems


def _string_problem(text: str, limits: SnapshotLimits) -> str | None:
    if len(text) > limits.max_string_chars:
        return f"has {len(text)} characters; at most {limits.max_string_chars} allowed"
    if not text.isascii() and _SURROGATE.search(text):
        return "must not contain lone surrogates"
    return None
